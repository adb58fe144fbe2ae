"""Features, code embeddings and the dataset export of the learned agents.

The embedding-endpoint tests run against a local fake HTTP server (a thread in this test
process) that returns deterministic vectors: no real embedding model exists here.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from dojo_core.agents import features as F
from dojo_core.agents.dataset import export_records
from dojo_core.agents.embedding import (EmbeddingError, EndpointEmbedding, HashedEmbedding,
                                        default_embedder, tokens)
from dojo_core.kernels import list_kernels, load_kernel
from dojo_core.printer import print_program
from dojo_core.records import program_hash
from dojo_core.transforms import actions, apply_step
from dojo_core.walks import random_walk


@pytest.mark.parametrize("name", list_kernels())
def test_state_features_fixed_length_deterministic_finite(name):
    program = load_kernel(name, {})
    v = F.state_features(program)
    assert v.dtype == np.float32 and v.shape == (F.FEATURE_DIM,)
    assert np.isfinite(v).all()
    again = F.state_features(load_kernel(name, {}))          # another object: recomputed
    assert np.array_equal(v, again)
    texts, walked = random_walk(program, 4, seed=7)
    w = F.state_features(walked)
    assert w.shape == (F.FEATURE_DIM,) and np.isfinite(w).all()
    acts = [a.text for a in actions(walked)]
    m = F.action_matrix(walked, acts)
    assert m.shape == (len(acts), F.ACTION_DIM) and np.isfinite(m).all()
    assert np.array_equal(m, F.action_matrix(walked, acts))


def test_features_see_annotations_locals_and_strides():
    root = load_kernel("matmul", {"N": 64, "M": 64, "K": 64})
    f = dict(zip(F.FEATURE_NAMES, F.state_features(root)))
    assert f["loops"] == 3 and f["max_depth"] == 3 and f["assigns"] == 2
    assert f["reductions"] == 1 and f["parallel_loops"] == 0
    # innermost k: A[i, k] unit stride, B[k, j] strided, C[i, j] invariant (x2: += reads it)
    assert f["inner_strided_frac"] > 0 and f["inner_invariant_frac"] > 0
    assert f["log2_flops"] == pytest.approx(np.log2(1 + 2 * 64 ** 3), rel=1e-6)   # mul + add
    p = root
    for step in ("fission j after s0", "interchange j2 k", "parallelize i", "vectorize j2"):
        p = apply_step(p, step)
    g = dict(zip(F.FEATURE_NAMES, F.state_features(p)))
    assert g["parallel_loops"] == 1 and g["parallel_outermost"] == 1
    assert g["log2_parallel_iters"] == pytest.approx(np.log2(65))
    assert g["vector_loops"] == 1 and g["vector_contiguous_frac"] > 0
    assert g["inner_unit_frac"] > f["inner_unit_frac"]       # j innermost: B, C unit stride
    split = apply_step(root, "split i by 24")                # 64 = 2*24 + 16: a min() tail
    assert dict(zip(F.FEATURE_NAMES, F.state_features(split)))["tail_loops"] == 1


def test_action_features_kind_and_loop():
    p = load_kernel("softmax", {"N": 64, "M": 128})
    names = F.ACTION_NAMES
    v = dict(zip(names, F.action_features(p, "vectorize k")))
    assert v["kind_vectorize"] == 1 and sum(v[f"kind_{k}"] for k in F.KINDS) == 1
    assert v["loop_innermost"] == 1 and v["loop_depth"] == 1
    assert v["loop_log2_extent"] == pytest.approx(np.log2(129))
    s = dict(zip(names, F.action_features(p, "split i by 16")))
    assert s["kind_split"] == 1 and s["log2_factor"] == 4 and s["factor_divides"] == 1
    assert s["loop_outermost"] == 1 and s["loop_log2_body_iters"] == pytest.approx(7)
    r = dict(zip(names, F.action_features(p, "stage X at j as Xt in register")))
    assert r["space_register"] == 1 and r["names_global_array"] == 1 and r["array_rank"] == 2
    assert F.action_features(p, "frobnicate i")[names.index("kind_other")] == 1


def test_hashed_embedding_deterministic_normalized_and_name_robust():
    e = HashedEmbedding()
    text = print_program(load_kernel("softmax", {}))
    v = e.embed(text)
    assert v.shape == (64,) and v.dtype == np.float32
    assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-5)
    assert np.array_equal(v, HashedEmbedding().embed(text))  # a fresh instance: same vector
    renamed = text.replace("X", "Z")
    other = print_program(load_kernel("matmul", {}))
    assert float(v @ e.embed(renamed)) > float(v @ e.embed(other))
    assert "<indent:2>" in tokens(text) and "max=" in tokens(text)
    assert e.embed_many([text, other]).shape == (2, 64)


class _FakeEmbeddings:
    """A fake OpenAI-compatible /embeddings: vector i = (len(text), count of 'for', 1, idx)."""
    calls: list = []

    @classmethod
    def respond(cls, path, body, authorization):
        cls.calls.append((path, body, authorization))
        if body.get("model") == "broken":
            return 500, None
        data = [{"index": i, "embedding": [float(len(t)), float(t.count("for")), 1.0, float(i)]}
                for i, t in enumerate(body["input"])]
        if body.get("model") == "short":
            data = data[:-1]
        return 200, {"data": list(reversed(data))}


@pytest.fixture
def fake_endpoint(json_endpoint):
    _FakeEmbeddings.calls = []
    return json_endpoint(_FakeEmbeddings.respond)


def test_endpoint_embedding_against_a_fake_server(fake_endpoint, monkeypatch):
    e = EndpointEmbedding(fake_endpoint, "fake-model", key="sk-test")
    texts = ["for i in 0..N:", "x", "for i:\n  for j:"]
    got = e.embed_many(texts)
    want = np.array([[len(t), t.count("for"), 1.0, i] for i, t in enumerate(texts)], float)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(got, want, atol=1e-6) and e.dim == 4
    path, body, auth = _FakeEmbeddings.calls[0]
    assert path == "/v1/embeddings" and body == {"model": "fake-model", "input": texts}
    assert auth == "Bearer sk-test"
    e.embed_many(texts[::-1])                                 # all cached: no request
    assert e.requests == 1 and len(_FakeEmbeddings.calls) == 1
    monkeypatch.setenv("DOJO_EMBEDDING_URL", fake_endpoint)
    monkeypatch.setenv("DOJO_EMBEDDING_MODEL", "m2")
    chosen = default_embedder()
    assert isinstance(chosen, EndpointEmbedding) and chosen.model == "m2"
    monkeypatch.delenv("DOJO_EMBEDDING_URL")
    assert isinstance(default_embedder(), HashedEmbedding)


def test_endpoint_embedding_errors_are_clear(fake_endpoint):
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        EndpointEmbedding(fake_endpoint, "broken").embed("x")
    with pytest.raises(EmbeddingError, match="expected 2 embeddings"):
        EndpointEmbedding(fake_endpoint, "short").embed_many(["a", "b"])
    with pytest.raises(EmbeddingError, match="URLError|ConnectionRefused"):
        EndpointEmbedding("http://127.0.0.1:9", "m", timeout=2).embed("x")


def test_export_records_transitions_chain():
    root = load_kernel("softmax", {"N": 16, "M": 32})
    steps = ["parallelize i", "vectorize j"]
    records = [
        {"kernel": "softmax", "sizes": {"N": 16, "M": 32}, "steps": [], "median_s": 1e-3,
         "verified": True, "error": None, "runner": "local", "fingerprint": "f"},
        {"kernel": "softmax", "sizes": {"N": 16, "M": 32}, "steps": steps[:1], "median_s": 5e-4,
         "verified": True, "error": None, "runner": "local"},
        {"source": print_program(root), "steps": steps, "median_s": 4e-4, "verified": True,
         "runner": "box"},
        {"kernel": "softmax", "sizes": {"N": 16, "M": 32}, "steps": ["fuse q r"]},
        {"kernel": "no_such_kernel", "steps": []},
        {"steps": ["parallelize i"]},
        "not a dict",
    ]
    errors = []
    lines = list(export_records(records, on_error=lambda i, why: errors.append(i)))
    assert all(line.endswith("\n") for line in lines)
    rows = [json.loads(line) for line in lines]
    assert [r["action"] for r in rows] == [None, "parallelize i", "vectorize j"]
    assert errors == [3, 4, 5, 6]
    assert rows[0]["state_hash"] == rows[0]["next_state_hash"] == program_hash(root)
    assert rows[1]["state_hash"] == program_hash(root)
    assert rows[1]["next_state_hash"] == rows[2]["state_hash"]
    after = apply_step(apply_step(root, steps[0]), steps[1])
    assert rows[2]["next_state_hash"] == program_hash(after)
    assert rows[2]["steps_before"] == ["parallelize i"] and rows[2]["runner"] == "box"
    assert rows[1]["median_s"] == 5e-4 and rows[0]["format"] == "perfdojo-transitions"

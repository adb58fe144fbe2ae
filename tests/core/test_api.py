"""The public API of dojo_core (its __init__): every name resolves, and the shared replay
cache returns exactly what step-by-step application gives, reusing prefixes across callers."""
from __future__ import annotations

import threading

import pytest

import dojo_core
from dojo_core import (DojoError, NotApplicable, apply_step, canonical, explain_at, generate,
                       line_refs, load, program_hash, replay)
from dojo_core.kernels import load_kernel
from dojo_core.replay_cache import ReplayCache
from dojo_core.steps import replay as replay_located

STEPS = ["split i by 4", "split j by 8", "interchange j0 j1", "unroll i1"]


def test_every_public_name_resolves_and_unknown_names_do_not():
    for name in dojo_core.__all__:
        assert getattr(dojo_core, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        dojo_core.nonesuch


def test_load_canonical_round_trip():
    text = canonical(load_kernel("matmul", {}))
    assert canonical(load(text, "m.dojo")) == text
    with pytest.raises(DojoError) as exc:
        load("kernel k(N = 4)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[j] = A[i]\n", "bad.dojo")
    assert str(exc.value).startswith("bad.dojo:6:")


def test_replay_equals_step_by_step_and_reuses_prefixes():
    root = load_kernel("matmul", {})
    cache = ReplayCache()
    expected = root
    for text in STEPS:
        expected = apply_step(expected, text)
    assert program_hash(replay(root, STEPS, cache)) == program_hash(expected)
    assert len(cache._programs) == len(STEPS)            # one state per prefix
    calls = []
    original = dojo_core.replay_cache.apply_step
    try:
        dojo_core.replay_cache.apply_step = lambda p, t: calls.append(t) or original(p, t)
        replay(root, STEPS + ["unroll j1"], cache)       # only the new step is applied
    finally:
        dojo_core.replay_cache.apply_step = original
    assert calls == ["unroll j1"]


def test_replay_refuses_the_illegal_step_and_the_located_replay_names_its_line():
    root = load_kernel("matmul", {})
    with pytest.raises(NotApplicable, match="no loop 'zz'"):
        replay(root, ["split i by 4", "split zz by 2"])
    with pytest.raises(DojoError) as exc:
        replay_located(root, [(3, "split i by 4"), (7, "split zz by 2")], "s.steps")
    assert str(exc.value) == "s.steps:7:1: step 'split zz by 2': there is no loop 'zz'"


def test_replay_cache_is_bounded_and_safe_across_threads():
    root = load_kernel("matmul", {})
    cache = ReplayCache(capacity=3)
    results, errors = [], []

    def work(n):
        try:
            results.append(program_hash(cache.program(root, [f"split i by {n}", "unroll i1"])))
        except Exception as exc:                          # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(n,)) for n in (2, 4, 8, 16) * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(results)) == 4
    assert len(cache._programs) <= 3


def test_explain_at_a_loop_and_a_statement():
    program = load_kernel("matmul", {})
    at_k = explain_at(program, "k")
    assert at_k.kind == "loop" and all("k" in a.text.replace(",", " ").split() for a in at_k.legal)
    reasons = dict(at_k.not_legal)
    assert "carries a dependence" in reasons["parallelize k"]
    at_s0 = explain_at(program, "s0")
    assert at_s0.kind == "statement" and at_s0.legal


def test_line_refs_name_loops_and_statements_at_their_canonical_lines():
    program = load_kernel("matmul", {})
    lines = canonical(program).splitlines()
    refs = line_refs(program)
    assert {refs[n] for n in refs} >= {"i", "j", "k", "s0"}
    for n, ref in refs.items():
        line = lines[n - 1].strip()
        assert line.startswith(f"for {ref} in") or ref.startswith("s")


def test_generate_c_and_cuda_by_target_name():
    program = load_kernel("matmul", {})
    assert "void dojo_kernel" in generate(program, "x86-avx2")
    assert "__global__" in generate(program, "cuda")

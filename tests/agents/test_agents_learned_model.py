"""The learned cost model: fit, predict, rank, its evaluator, and its rank
correlation on held-out real measurements (gcc-compiled, timed on this machine)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dojo_core.agents.cost_model import (CostModel, CostModelEvaluator, kendall,
                                         program_of_record, spearman)
from dojo_core.agents.features import FEATURE_NAMES, state_features
from dojo_core.replay_cache import SHARED
from dojo_core.kernels import load_kernel
from dojo_core.printer import print_program
from dojo_core.records import program_hash
from dojo_core.transforms import apply_step
from dojo_core.walks import random_walk

SIZES = {"N": 32, "M": 64}


def known_log_seconds(program) -> float:
    f = dict(zip(FEATURE_NAMES, state_features(program)))
    return -0.7 * f["vector_loops"] + 0.4 * f["loops"] - 0.2 * f["locals_register"]


def walked(name, sizes, count, depth=4, kinds=None, first_seed=0):
    root = load_kernel(name, sizes)
    states, out = SHARED, []
    for seed in range(first_seed, first_seed + count):
        steps, _ = random_walk(root, 1 + seed % depth, seed, kinds=kinds)
        out.append((tuple(steps), states.program(root, tuple(steps))))
    return root, out


# the moves whose effects the synthetic relation's features describe: a fixed list, so
# that the walks (and the fit's data) do not drift as the catalogue grows
WALK_KINDS = ("split", "interchange", "vectorize", "parallelize", "unroll", "accumulate",
              "stage", "fission", "fuse", "hoist")


@pytest.fixture(scope="module")
def softmax_states():
    return walked("softmax", SIZES, 40, kinds=WALK_KINDS)


def test_rank_correlations():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert kendall([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0


def test_fits_a_known_synthetic_relation(softmax_states):
    _, states = softmax_states
    pairs = [(p, 1e-3 * math.exp(known_log_seconds(p))) for _, p in states]
    model = CostModel(alpha=0.1, use_embedding=False).fit(pairs[:30])
    quality = model.rank_quality(pairs[30:])
    assert quality["n"] == 10 and quality["spearman"] > 0.9, quality
    predicted = model.predict([p for p, _ in pairs[30:]])
    want = np.array([known_log_seconds(p) for p, _ in pairs[30:]])
    assert np.corrcoef(predicted, want)[0, 1] > 0.9    # log time, up to a constant
    with_embedding = CostModel(alpha=0.1).fit(pairs[:30])
    assert with_embedding.rank_quality(pairs[30:])["spearman"] > 0.8


def test_fit_within_kernels_and_from_records(softmax_states):
    root, states = softmax_states
    layer_root, layer_states = walked("layernorm", SIZES, 12)
    records = []
    for r, group, offset in ((root, states[:18], 1.0), (layer_root, layer_states, 50.0)):
        for steps, p in group:
            records.append({"kernel": r.name, "sizes": SIZES, "steps": list(steps),
                            "source_hash": program_hash(r), "fingerprint": "f",
                            "median_s": offset * 1e-3 * math.exp(known_log_seconds(p)),
                            "verified": True, "error": None})
    records.append({"kernel": "softmax", "sizes": SIZES, "steps": ["vectorize j"],
                    "median_s": None, "verified": True, "error": "compile error"})
    records.append({"kernel": "softmax", "sizes": SIZES, "steps": ["nonsense"],
                    "median_s": 1.0, "verified": True, "error": None})
    records.append({"source": print_program(root), "steps": [], "median_s": 2e-3,
                    "verified": False, "error": None})
    model = CostModel(alpha=0.1, use_embedding=False).fit(records)
    assert model.skipped == 3 and model.samples == 30
    held_out = [(p, 1e-3 * math.exp(known_log_seconds(p))) for _, p in states[18:]]
    assert model.rank_quality(held_out)["spearman"] > 0.9
    assert program_of_record({"source": print_program(root), "steps": ["parallelize i"]}) \
        == apply_step(root, "parallelize i")
    assert program_of_record({"steps": []}) is None
    with pytest.raises(ValueError, match="at least two"):
        CostModel().fit(records[-3:])


def test_rank_is_a_prior_and_the_evaluator_answers_from_the_model(softmax_states):
    root, states = softmax_states
    pairs = [(p, 1e-3 * math.exp(known_log_seconds(p))) for _, p in states]
    model = CostModel(alpha=0.1, use_embedding=False).fit(pairs)

    class Move:                                   # the shape of agents.macros.Move
        def __init__(self, steps):
            self.steps = steps
    scores = model.rank(root, ["vectorize j", "split i by 4", "fuse nothing here",
                               Move(("vectorize j", "vectorize k"))])
    assert scores[2] == -math.inf
    assert scores[3] > scores[0] > scores[1]      # more vector loops: predicted faster
    evaluator = CostModelEvaluator(model, root_seconds=2e-3)
    m = evaluator.evaluate(root, ())
    assert m.source == "model" and m.ok and m.median_s == pytest.approx(2e-3)
    faster = evaluator.evaluate(root, ("vectorize j",))
    assert faster.median_s == pytest.approx(2e-3 * math.exp(-0.7), rel=0.05)
    bad = evaluator.evaluate(root, ("fuse nothing here",))
    assert not bad.ok and "illegal step" in bad.error
    assert evaluator.fingerprint.startswith("model:")

    class Base:                                   # a base evaluator measures the root once
        calls = 0

        def evaluate(self, program, steps):
            Base.calls += 1
            from dojo_core.agents.base import Measurement
            return Measurement(5e-3)
    anchored = CostModelEvaluator(model, base=Base())
    assert anchored.evaluate_many([(root, ()), (root, ("vectorize j",))])[0].median_s == 5e-3
    assert Base.calls == 1


def test_rank_correlation_on_held_out_real_measurements():
    from dojo_core.agents.evaluators import LocalEvaluator
    kinds = {"vectorize", "split", "interchange", "fission", "stage", "accumulate", "reorder"}
    root, states = walked("layernorm", {"N": 64, "M": 256}, 24, depth=3, kinds=kinds)
    evaluator = LocalEvaluator(min_time=0.005, threads=1)
    try:
        pairs = [(p, evaluator.evaluate(root, steps)) for steps, p in states]
    finally:
        evaluator.close()
    pairs = [(p, m.median_s) for p, m in pairs if m.ok]
    assert len(pairs) >= 18
    model = CostModel(use_embedding=False).fit(pairs[:16])
    quality = model.rank_quality(pairs[16:])
    assert quality["spearman"] > 0, quality


def test_rank_is_usable_as_the_prior_of_the_greedy_agent(softmax_states):
    from dojo_core.agents import make_agent
    root, states = softmax_states
    pairs = [(p, 1e-3 * math.exp(known_log_seconds(p))) for _, p in states]
    model = CostModel(alpha=0.1, use_embedding=False).fit(pairs)
    evaluator = CostModelEvaluator(model, root_seconds=1e-3)
    result = make_agent("greedy", width=3, prior=model.rank, macros=False).search(
        root, evaluator, 4, seed=0)
    assert len(result.trials) == 4
    # with the model's ranking, the first children greedy measures are vector loops
    assert all("vectorize" in t.steps[-1] for t in result.trials[1:]), result.trials

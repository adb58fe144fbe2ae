"""The learned Q-agent: target, replay buffer, target network, training,
the search contract, persistence.

Rewards in the training and search tests come from a ``CostModelEvaluator`` (a real cost
model fitted on a known synthetic relation: fast, deterministic) except one search on the
real LocalEvaluator (gcc compile and run) that checks the budget end to end.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dojo_core.agents import make_agent
from dojo_core.agents.cost_model import CostModel, CostModelEvaluator
from dojo_core.agents.features import FEATURE_NAMES, state_features
from dojo_core.agents.qagent import QAgent
from dojo_core.agents.qnetwork import (QNetwork, ReplayBuffer, Transition, max_reward_target,
                                       single_threaded_blas)
from dojo_core.replay_cache import SHARED
from dojo_core.kernels import load_kernel
from dojo_core.transforms import apply_step
from dojo_core.walks import random_walk

SIZES = {"N": 32, "M": 64}


def synthetic_seconds(program) -> float:
    """A known cost: vector loops and register locals make a state faster."""
    f = dict(zip(FEATURE_NAMES, state_features(program)))
    return 1e-3 * math.exp(-0.6 * f["vector_loops"] - 0.3 * f["locals_register"]
                           + 0.2 * f["tail_loops"])


@pytest.fixture(scope="module")
def model_evaluator():
    root = load_kernel("softmax", SIZES)
    states = SHARED
    pairs = []
    for seed in range(40):
        steps, program = random_walk(root, 1 + seed % 4, seed)
        pairs.append((states.program(root, tuple(steps)), None))
    pairs = [(p, synthetic_seconds(p)) for p, _ in pairs]
    return root, CostModelEvaluator(CostModel(use_embedding=False).fit(pairs), root_seconds=1e-3)


def test_max_reward_target_on_a_hand_made_transition():
    assert max_reward_target(0.5, np.array([0.2, 0.9]), 0.9) == pytest.approx(0.81)
    assert max_reward_target(1.0, np.array([0.2, 0.9]), 0.9) == pytest.approx(1.0)
    assert max_reward_target(-1.0, None, 0.9) == -1.0                # terminal: the reward
    assert max_reward_target(0.3, np.zeros(0), 0.9) == 0.3
    agent = QAgent(gamma=0.5)
    net = QNetwork(3, hidden=(4,), seed=1)
    next_x = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]])
    q = net.predict(next_x)
    t = Transition(np.zeros(3), 0.1, next_x)
    want = max(0.1, 0.5 * q.max())
    assert agent.td_targets([t], net)[0] == pytest.approx(want)
    other = QNetwork(3, hidden=(4,), seed=2)        # double Q: other picks a', net values it
    pick = int(np.argmax(other.predict(next_x)))
    assert agent.td_targets([t], net, other)[0] == pytest.approx(max(0.1, 0.5 * q[pick]))


def test_replay_buffer_ring_and_sampling():
    buf = ReplayBuffer(capacity=3)
    for i in range(5):
        buf.add(Transition(np.array([float(i)]), float(i), None))
    assert len(buf) == 3
    assert sorted(t.reward for t in buf.items) == [2.0, 3.0, 4.0]  # the oldest overwritten
    rng = np.random.default_rng(0)
    sample = buf.sample(2, rng)
    assert len(sample) == 2 and len({t.reward for t in sample}) == 2
    assert sorted(t.reward for t in buf.sample(10, rng)) == [2.0, 3.0, 4.0]


def test_target_network_is_copied_every_target_every_updates():
    agent = QAgent(target_every=3, batch=4, lr=1e-2, weights=None)
    rng = np.random.default_rng(0)
    agent.net, agent.target = QNetwork(5, (8,), 0), QNetwork(5, (8,), 0)
    agent.normalized = True
    for i in range(8):
        agent.buffer.add(Transition(rng.standard_normal(5), float(i % 3), None))
    before = [p.copy() for p in agent.target.params]
    agent.update(rng)
    agent.update(rng)
    assert all(np.array_equal(a, b) for a, b in zip(before, agent.target.params))
    assert not all(np.array_equal(a, b) for a, b in zip(agent.net.params, agent.target.params))
    agent.update(rng)                                                  # the 3rd: copied
    assert all(np.array_equal(a, b) for a, b in zip(agent.net.params, agent.target.params))


def test_short_training_reduces_the_td_loss(model_evaluator):
    root, evaluator = model_evaluator
    agent = QAgent(max_depth=3, target_every=10_000, seed=0, weights=None)
    stats = agent.train([root], lambda r: evaluator, episodes=6, seed=0, children=2,
                        updates_per_step=1)
    assert stats["episodes"] == 6 and stats["measurements"] >= 6 * 2
    assert stats["best"]["softmax"] > 0                  # some vectorize was found and paid
    transitions = list(agent.buffer.items)
    agent.target.copy_from(agent.net)                    # a fixed target: a fair comparison
    before = agent.td_loss(transitions)
    rng = np.random.default_rng(1)
    agent.batch = 16
    with single_threaded_blas():
        for _ in range(150):
            agent.update(rng)
    after = agent.td_loss(transitions)
    assert after < 0.5 * before, (before, after)


def test_search_honours_the_budget_events_and_stop(model_evaluator):
    root, evaluator = model_evaluator
    agent = QAgent(seed=0)
    events = []
    result = agent.search(root, evaluator, 12, seed=3, on_event=events.append)
    assert len(result.trials) == 12 and result.baseline.steps == ()
    assert [e.index for e in events] == list(range(12))
    assert all(e.budget == 12 for e in events)
    for trial in result.trials:                          # every measured path replays
        p = root
        for step in trial.steps:
            p = apply_step(p, step)
    assert len({tuple(t.steps) for t in result.trials}) == 12
    assert result.to_history()["steps"][0]["text"] == ""
    calls = []
    stopped = agent.search(root, evaluator, 12, seed=3, on_event=calls.append,
                           should_stop=lambda: len(calls) >= 5)
    assert stopped.stopped and len(stopped.trials) == 5


def test_search_on_the_real_evaluator_keeps_the_budget():
    from dojo_core.agents.evaluators import LocalEvaluator
    root = load_kernel("relu", {"N": 64, "M": 64})
    evaluator = LocalEvaluator(min_time=0.002, threads=1)
    try:
        result = QAgent(seed=0).search(root, evaluator, 4, seed=0)
    finally:
        evaluator.close()
    assert len(result.trials) == 4
    assert all(t.measurement.source in ("measured", "cache") for t in result.trials)
    assert result.baseline.median_s is not None and math.isfinite(result.speedup)


def test_save_load_round_trip_and_mismatch(tmp_path, model_evaluator):
    root, evaluator = model_evaluator
    agent = QAgent(max_depth=2, seed=4, weights=None)
    agent.train([root], lambda r: evaluator, episodes=2, seed=0, children=2)
    path = tmp_path / "q.npz"
    agent.save(path)
    loaded = QAgent.load(path)
    texts = agent.candidates(root)
    x = agent.encode(state_features(root), root, texts)
    assert np.allclose(agent.net.predict(x), loaded.net.predict(x))
    assert loaded.max_depth == 2 and loaded.gamma == agent.gamma
    from dojo_core.agents.embedding import HashedEmbedding
    with pytest.raises(ValueError, match="embedder"):
        QAgent.load(path, embedder=HashedEmbedding(dim=16))
    with pytest.raises(ValueError, match="train it first"):
        QAgent(weights=None).save(tmp_path / "empty.npz")
    assert np.allclose(QAgent(weights=path).net.predict(x), loaded.net.predict(x))
    with pytest.raises(ValueError, match="not Q-agent weights"):
        QAgent(weights=tmp_path / "missing.npz")


def test_registered_as_q():
    assert isinstance(make_agent("q"), QAgent)


def test_candidates_drop_bind_odd_splits_and_long_unrolls():
    root = load_kernel("softmax", {"N": 64, "M": 128})
    texts = QAgent().candidates(root)
    assert not any(t.startswith("bind") for t in texts)
    assert "split i by 2" not in texts and "split i by 4" in texts
    assert not any(t.startswith("unroll") for t in texts)            # every loop is > 32
    small = apply_step(root, "split j by 8")
    assert "unroll j1" in QAgent().candidates(small)
    assert any(t.startswith("bind") for t in QAgent().candidates(root, gpu=True))


def test_the_registry_agent_starts_from_the_shipped_weights():
    from dojo_core.agents.qagent import DEFAULT_WEIGHTS
    agent = make_agent("q")
    assert DEFAULT_WEIGHTS.is_file() and agent.net is not None and agent.normalized
    root = load_kernel("softmax", {"N": 64, "M": 128})
    texts = agent.candidates(root)
    q = agent.net.predict(agent.encode(state_features(root), root, texts))
    rated = {t.removeprefix("macro: "): float(v) for t, v in zip(texts, q)}
    # trained without softmax, it still rates a vector loop over every split of the root
    vector = max(v for t, v in rated.items() if t.startswith("vectorize"))
    assert vector > max(v for t, v in rated.items() if t.startswith("split")), rated
    assert QAgent(weights=None).net is None


def test_macro_moves_are_single_actions_that_apply_all_their_steps():
    root = load_kernel("matmul", {"N": 32, "M": 64, "K": 48})
    texts, seqs = QAgent(weights=None).moves(root)
    tiles = [i for i, t in enumerate(texts) if t.startswith("macro: tile ")]
    assert tiles and all(len(seqs[i]) > 5 for i in tiles)              # one action, many steps
    assert all(seqs[i] == (t,) for i, t in enumerate(texts) if not t.startswith("macro:"))
    from dojo_core.agents.features import ACTION_NAMES, action_matrix
    x = dict(zip(ACTION_NAMES, action_matrix(root, [texts[tiles[0]]])[0]))
    assert x["macro"] == 1 and x["macro_tile"] == 1 and x["macro_log2_tile_b"] > 0
    assert "macro: tile" not in " ".join(QAgent(weights=None, macros=False).candidates(root))


def test_a_search_taking_a_macro_records_its_steps(model_evaluator):
    """With every macro rated best, the first child measured is a macro's result, and each
    trial holds the steps its macros applied (so the history replays)."""
    root = load_kernel("matmul", {"N": 32, "M": 64, "K": 48})
    agent = QAgent(weights=None, epsilon=0.0)
    texts, seqs = agent.moves(root)
    agent._ensure_net(agent.encode(state_features(root), root, texts))
    agent.net.predict = lambda x: x[:, -7] * 10.0 - 1.0            # column 'macro' (see below)
    from dojo_core.agents.features import ACTION_NAMES
    assert ACTION_NAMES[-7] == "macro"

    class Evaluator:
        gpu = False

        def evaluate(self, program, steps):
            from dojo_core.agents.base import Measurement
            return Measurement(median_s=1e-3 / (1 + len(steps)), verified=True)

        def evaluate_many(self, items):
            return [self.evaluate(p, s) for p, s in items]
    result = agent.search(root, Evaluator(), budget=4, seed=0)
    taken = [tuple(t.steps) for t in result.trials[1:]]
    macros = [seqs[i] for i, t in enumerate(texts) if t.startswith("macro:")]
    assert taken and taken[0] in macros
    assert all(any(s[:len(m)] == m for m in macros) for s in taken)    # macros, then more

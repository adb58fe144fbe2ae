"""The Gymnasium environment (dojo_core/env.py): gymnasium's checker, masks, rewards, the
step budget; with the FAKE analytic evaluator of tests/agents_fake.py (labelled there) and
once with the real LocalEvaluator at a tiny size."""
import math

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from dojo_core.env import DojoEnv
from dojo_core.kernels import load_kernel
from dojo_core.records import RecordStore

from agents_fake import AnalyticEvaluator


def tiny(name="softmax"):
    sizes = {"softmax": {"N": 8, "M": 16}, "matmul": {"N": 8, "M": 8, "K": 8}}[name]
    return load_kernel(name, sizes)


def test_env_passes_gymnasium_checker():
    env = DojoEnv(tiny(), AnalyticEvaluator(), max_steps=4)
    check_env(env, skip_render_check=True)


def test_observation_mask_and_stop():
    env = DojoEnv(tiny(), AnalyticEvaluator(), max_steps=8)
    obs, info = env.reset(seed=0)
    assert obs["ir"].startswith("#") or "kernel softmax" in obs["ir"]
    assert env.observation_space.contains(obs)
    mask = env.action_masks()
    assert mask[0] == 1 and mask.sum() == len(info["actions"])
    assert (info["action_mask"] == mask).all()
    assert not any(a.startswith("bind") for a in info["actions"])
    _, reward, terminated, truncated, _ = env.step(0)
    assert terminated and reward == 0.0


def test_log_speedup_reward_and_step_budget():
    ev = AnalyticEvaluator()
    env = DojoEnv(tiny(), ev, max_steps=2)
    _, info = env.reset(seed=0)
    index = info["actions"].index("vectorize j")
    _, reward, terminated, truncated, info = env.step(index)
    before, after = ev.evaluate(tiny(), ()), ev.evaluate(tiny(), ("vectorize j",))
    assert reward == pytest.approx(math.log(before.median_s / after.median_s))
    assert reward > 0 and not terminated and not truncated
    _, _, _, truncated, _ = env.step(len(info["actions"]) + 3)     # invalid: a no-op
    assert truncated


def test_max_reward_only_rewards_new_bests():
    """max_reward pays log(best so far / new time) for a new best and exactly 0 otherwise,
    also when the new state is faster than the previous one but not than the best."""
    ev = AnalyticEvaluator()
    env = DojoEnv(tiny(), ev, reward="max_reward")
    _, info = env.reset(seed=0)
    root = ev.evaluate(tiny(), ()).median_s
    _, r1, *_, info = env.step(info["actions"].index("vectorize j"))
    best = ev.evaluate(tiny(), ("vectorize j",)).median_s
    assert r1 == pytest.approx(math.log(root / best)) and r1 > 0
    for text in info["actions"]:
        if text == "stop":
            continue
        steps = ("vectorize j", text)
        t = ev.evaluate(tiny(), steps).median_s
        if t >= best:                        # a state no better than the best so far
            break
    else:
        pytest.fail("every action of the state improved on it: no state to check the zero reward with")
    _, r2, *_ = env.step(info["actions"].index(text))
    assert r2 == 0.0


def test_failed_state_is_penalised_and_undone():
    env = DojoEnv(tiny(), AnalyticEvaluator(fail_steps={"vectorize j"}))
    _, info = env.reset(seed=0)
    _, reward, _, _, info = env.step(info["actions"].index("vectorize j"))
    assert reward == -1.0 and info["steps"] == [] and "error" in info


def test_env_with_real_local_evaluator(tmp_path):
    from dojo_core.agents.evaluators import LocalEvaluator
    ev = LocalEvaluator(min_time=0.001, store=RecordStore(tmp_path / "m.jsonl"))
    try:
        env = DojoEnv(tiny(), ev, max_steps=3)
        _, info = env.reset(seed=0)
        assert info["median_s"] > 0
        _, reward, _, _, info = env.step(info["actions"].index("vectorize k"))
        assert np.isfinite(reward) and info["median_s"] > 0 and info["steps"] == ["vectorize k"]
    finally:
        ev.close()

"""The Gymnasium environment of the transformation game (DESIGN.md section 8, issue 7).

``DojoEnv(root_program, evaluator, max_steps=16, max_actions=256, reward="log_speedup")``

* Observation: ``{"ir": the canonical IR text (cut at ``max_ir_chars``), "features":
  agents.features.state_features(program)}`` (a small built-in fallback vector when that
  module is absent).
* Action: ``Discrete(max_actions)`` over the current legal action list
  (``transforms.actions``; ``bind`` steps only when the evaluator says ``gpu``): index 0 is
  *stop*, index i >= 1 is the (i-1)-th action.  ``info["action_mask"]`` and
  ``action_masks()`` mark the valid indices; ``info["actions"]`` lists their texts.  An
  index past the list is a no-op (reward 0, ``info["invalid_action"]``), never an error.
* Reward: ``"log_speedup"``: log(previous time / new time); ``"max_reward"``: log(best time
  so far / new time) when the new state beats the best so far, else 0.  A state that fails
  to compile, run or verify gives reward -1 and the step is undone.
* Episode end: the stop action or a state without legal actions (terminated), or
  ``max_steps`` steps (truncated).
* Every state is measured with ``evaluator.evaluate(root, steps)`` (base.Evaluator); the
  root is measured once per environment.
"""
from __future__ import annotations

import math
import string

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .printer import print_program
from .transforms import actions, apply_step

IR_CHARSET = string.printable


def _features_module():
    try:
        from .agents import features
        return features
    except ImportError:
        return None


def fallback_features(program) -> np.ndarray:
    """Loop count, depth, annotations and statement count (used without agents.features)."""
    from . import ir
    loops = ir.loops(program)

    def depth(body, d=0):
        return max([depth(s.body, d + 1) for s in body if isinstance(s, ir.Loop)] + [d])
    counts = [len(loops), depth(program.body), len(ir.assignments(program))]
    for ann in ("parallel", "vector", "unroll"):
        counts.append(sum(ann in l.annotations for l in loops))
    return np.log2(1.0 + np.asarray(counts, dtype=np.float32))


class DojoEnv(gym.Env):
    metadata = {"render_modes": ["ansi"]}

    def __init__(self, root_program, evaluator, max_steps: int = 16, max_actions: int = 256,
                 reward: str = "log_speedup", max_ir_chars: int = 65536, render_mode=None):
        if reward not in ("log_speedup", "max_reward"):
            raise ValueError(f"reward must be 'log_speedup' or 'max_reward', not {reward!r}")
        self.root, self.evaluator = root_program, evaluator
        self.max_steps, self.max_actions, self.reward_kind = max_steps, max_actions, reward
        self.max_ir_chars, self.render_mode = max_ir_chars, render_mode
        features = _features_module()
        self._features = features.state_features if features else fallback_features
        dim = len(self._features(root_program))
        self.observation_space = spaces.Dict({
            "ir": spaces.Text(max_length=max_ir_chars, min_length=0, charset=IR_CHARSET),
            "features": spaces.Box(-1e9, 1e9, shape=(dim,), dtype=np.float32),
        })
        self.action_space = spaces.Discrete(max_actions)
        self._baseline = None
        self._reset_state()

    # ------------------------------------------------------------------ helpers

    def _reset_state(self) -> None:
        self.program, self.steps, self.count = self.root, (), 0
        self._time = self._best = None
        self._legal = self._legal_actions(self.root)

    def _legal_actions(self, program) -> list:
        gpu = bool(getattr(self.evaluator, "gpu", False))
        found = [a.text for a in actions(program) if gpu or a.kind != "bind"]
        return found[:self.max_actions - 1]

    def action_masks(self) -> np.ndarray:
        mask = np.zeros(self.max_actions, dtype=np.int8)
        mask[:1 + len(self._legal)] = 1
        return mask

    def _observation(self) -> dict:
        text = print_program(self.program)[:self.max_ir_chars]
        text = "".join(c for c in text if c in IR_CHARSET)
        return {"ir": text, "features": np.asarray(self._features(self.program), dtype=np.float32)}

    def _info(self, **extra) -> dict:
        return {"action_mask": self.action_masks(), "actions": ["stop"] + list(self._legal),
                "steps": list(self.steps), "median_s": self._time, "best_s": self._best, **extra}

    # ------------------------------------------------------------------ gym API

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._reset_state()
        if self._baseline is None:
            self._baseline = self.evaluator.evaluate(self.root, ())
        self._time = self._best = self._baseline.median_s
        return self._observation(), self._info()

    def step(self, action):
        action = int(action)
        self.count += 1
        truncated = self.count >= self.max_steps
        if action == 0:
            return self._observation(), 0.0, True, truncated, self._info(stopped=True)
        if not 1 <= action <= len(self._legal):
            return self._observation(), 0.0, False, truncated, self._info(invalid_action=True)
        text = self._legal[action - 1]
        program = apply_step(self.program, text)
        m = self.evaluator.evaluate(self.root, self.steps + (text,))
        if not m.ok:
            return self._observation(), -1.0, False, truncated, \
                self._info(failed=text, error=m.error)
        reward = self._reward(m.median_s)
        self.program, self.steps, self._time = program, self.steps + (text,), m.median_s
        self._best = m.median_s if self._best is None else min(self._best, m.median_s)
        self._legal = self._legal_actions(program)
        terminated = not self._legal
        return self._observation(), reward, terminated, truncated, self._info(step=text)

    def _reward(self, new: float) -> float:
        if not new or new <= 0:
            return 0.0
        if self.reward_kind == "max_reward":
            return math.log(self._best / new) if self._best and new < self._best else 0.0
        return math.log(self._time / new) if self._time else 0.0

    def render(self):
        return print_program(self.program)

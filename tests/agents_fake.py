"""A FAKE evaluator for the search-logic tests: an analytic model, not a measurement.

It exists to test the agents' bookkeeping (budget, determinism, events, stop, histories)
quickly and deterministically; it says nothing about real speed.  Time of a state =
(statement instances) / (gains of its annotations), plus a tiny deterministic jitter from
the program hash so that ties are broken the same way every run.
"""
from __future__ import annotations

from dojo_core import ir
from dojo_core.agents.base import Measurement
from dojo_core.replay_cache import SHARED
from dojo_core.harness import estimated_work
from dojo_core.records import program_hash

GAINS = {"vector": 4.0, "parallel": 1.8, "unroll": 1.1}


class AnalyticEvaluator:
    """FAKE (analytic model; see the module docstring)."""
    fingerprint = "fake-analytic-model"

    def __init__(self, fail_steps=()):
        self.states = SHARED
        self.calls = []
        self.fail_steps = set(fail_steps)

    def evaluate(self, program, steps=()):
        steps = tuple(steps)
        self.calls.append(steps)
        if self.fail_steps & set(steps):
            return Measurement(None, error="fake failure", source="model", runner="fake")
        state = self.states.program(program, steps)
        gain = 1.0
        for loop in ir.loops(state):
            for ann in loop.annotations:
                gain *= GAINS.get(ann, 1.0)
        locals_ = sum(isinstance(s, ir.Local) for s in ir.walk_stmts(state.body))
        gain *= 1.05 ** min(locals_, 4)
        jitter = int(program_hash(state)[:6], 16) / 16 ** 6 * 1e-3
        t = estimated_work(state) * 1e-9 / gain * (1 + jitter)
        return Measurement(t, min_s=t, max_s=t, source="model", runner="fake")

    def evaluate_many(self, items):
        return [self.evaluate(p, s) for p, s in items]

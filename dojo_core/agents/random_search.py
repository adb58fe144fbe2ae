"""The random agent: random legal walks from the root, measuring every new state on the way.

Each walk draws up to ``max_depth`` moves; a move is drawn by kind first (so the many split
factors do not crowd out rarer moves), then uniformly within the kind; macro moves
(``macros.py``) form one kind beside the atomic ones unless ``macros=False``.
Deterministic for a given seed and evaluator answers.
"""
from __future__ import annotations

import random

from .base import Agent
from .search import Session


class RandomAgent(Agent):
    name = "random"

    def __init__(self, max_depth: int = 8, macros: bool = True, prior=None):
        self.max_depth, self.macros = max_depth, macros

    def search(self, root, evaluator, budget, *, seed=0, on_event=None, should_stop=None):
        rng = random.Random(seed)
        session = Session(self.name, root, evaluator, budget, on_event, should_stop)
        session.baseline()
        idle = 0
        while not session.done and idle < 200:
            steps = ()
            for _ in range(rng.randint(1, self.max_depth)):
                moves = session.moves(steps, macros=self.macros)
                if not moves or session.done:
                    break
                by_kind = {}
                for move, child in moves:
                    by_kind.setdefault(move.kind, []).append(child)
                child = rng.choice(by_kind[rng.choice(sorted(by_kind))])
                try:
                    session.program(child)
                except Exception:                                       # noqa: BLE001
                    break
                steps = child
                if session.measure_one(steps) is not None:
                    idle = 0
                else:
                    idle += 1
        return session.finish()

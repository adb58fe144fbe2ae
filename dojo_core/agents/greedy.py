"""The greedy agent: measure the children of the current best state, move to the best child
while that improves; when a state's children stop improving, measure its next-ranked
children, and when it has none left, continue from the best measured state not yet
exhausted (best-first).  Children are ranked by the prior (``search.candidate_moves``),
``width`` of them measured per round.  Deterministic for given evaluator answers.
"""
from __future__ import annotations

from .base import Agent
from .search import Session


class GreedyAgent(Agent):
    name = "greedy"

    def __init__(self, width: int = 12, prior=None, macros: bool = True):
        self.width, self.prior, self.macros = width, prior, macros

    def search(self, root, evaluator, budget, *, seed=0, on_event=None, should_stop=None):
        session = Session(self.name, root, evaluator, budget, on_event, should_stop)
        session.baseline()
        pending = {}                 # steps -> ranked children not yet measured
        exhausted = set()
        current = ()
        while not session.done:
            if current not in pending:
                pending[current] = [c for _, c in session.moves(current, self.prior, self.macros)]
            queue = pending[current]
            batch = []
            while queue and len(batch) < self.width:
                child = queue.pop(0)
                if session.fresh(child):
                    batch.append(child)
            measured = session.measure(batch)
            before = session.time_of(current)
            best = min((t for t in measured if t.median_s is not None),
                       key=lambda t: t.median_s, default=None)
            if best is not None and (before is None or best.median_s < before):
                current = best.steps
                continue
            if not queue:
                exhausted.add(current)
                options = [t for t in session.result.trials
                           if t.median_s is not None and t.steps not in exhausted]
                if not options:
                    break
                current = min(options, key=lambda t: (t.median_s, len(t.steps))).steps
        return session.finish()

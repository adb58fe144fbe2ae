"""The beam agent: keep the ``width`` best measured states; each round measures the next
``per_state`` best-ranked unmeasured children of every beam state (interleaved), then the
beam becomes the ``width`` best among the old beam and the children measured.  A state
whose children are all measured leaves the beam; the search ends when the beam is empty or
the budget is spent.  Deterministic for given evaluator answers.
"""
from __future__ import annotations

from .base import Agent
from .search import Session


class BeamAgent(Agent):
    name = "beam"

    def __init__(self, width: int = 4, per_state: int = 6, prior=None, macros: bool = True):
        self.width, self.per_state, self.prior, self.macros = width, per_state, prior, macros

    def search(self, root, evaluator, budget, *, seed=0, on_event=None, should_stop=None):
        session = Session(self.name, root, evaluator, budget, on_event, should_stop)
        session.baseline()
        pending = {}
        beam = [()]
        while beam and not session.done:
            lists = []
            for steps in beam:
                if steps not in pending:
                    pending[steps] = [c for _, c in session.moves(steps, self.prior, self.macros)]
                picked, queue = [], pending[steps]
                while queue and len(picked) < self.per_state:
                    child = queue.pop(0)
                    if session.fresh(child):
                        picked.append(child)
                lists.append(picked)
            batch = [l[i] for i in range(self.per_state) for l in lists if i < len(l)]
            session.measure(batch)
            pool = {s for s in beam if pending.get(s)}
            pool |= {t.steps for t in session.result.trials
                     if t.median_s is not None and _child_of_beam(t.steps, beam)}
            ranked = sorted((s for s in pool if session.time_of(s) is not None
                             and (s not in pending or pending[s])),
                            key=lambda s: (session.time_of(s), len(s)))
            beam = ranked[:self.width]
        return session.finish()


def _child_of_beam(steps, beam) -> bool:
    return any(len(steps) > len(b) and steps[:len(b)] == b for b in beam)

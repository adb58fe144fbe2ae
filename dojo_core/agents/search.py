"""What every search agent shares: the measuring session (budget, events, stop) and the
candidate moves of a state (pruned, ranked by a prior).

``Session`` guarantees the contract of ``base.py``: the baseline is measured first and
counts; no more than ``budget`` measurements are asked for (cache hits included); a state
already measured in this search (same steps, same canonical IR or, where the evaluator
offers ``code_key``, the same generated code) is never measured twice; ``on_event`` runs
after every measurement, in order; ``should_stop`` is polled between measurements; the
result's ``phases`` says where the time went (``phases.PhaseClock``). Where the evaluator
can re-time states (``remeasure``) and the budget is at least MIN_CONFIRM_BUDGET, the last
(1 + candidates) * CONFIRM_ROUNDS measurements of the budget are kept for ``confirm``: the
root and the fastest state (the CONFIRM_CANDIDATES fastest from MIN_CANDIDATES_BUDGET on)
timed again together, the fastest re-timed kept only if it is faster than the root beyond
the spread and by at least MIN_GAIN. Where
the evaluator offers ``prepare(items)``, a batch is handed to it before it is measured (the
local evaluator compiles the batch in parallel).  Every
trial's steps are legal from the root (moves are replayed before they are measured; an
illegal one is dropped without cost), so ``to_history()`` always replays.

``candidate_moves(program, ...)``: macro moves (``macros.py``) plus the legal atomic actions,
minus the ones that cannot pay off on a CPU evaluator (``bind``: the C code ignores it) and
with split factors thinned to powers of two from 4 to 256; ranked by the prior (a callable
``prior(program, moves) -> scores``, higher first; ``default_prior`` ranks by kind).
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Callable, Optional

from .. import ir
from ..errors import DojoError
from ..records import program_hash
from ..transforms import actions
from ..transforms.util import find_loop
from .base import Measurement, SearchEvent, SearchResult, Trial
from .macros import Move, macro_moves
from .phases import PhaseClock
from ..replay_cache import SHARED, ReplayCache

KIND_PRIOR = {"macro": 10.0, "vectorize": 6.0, "parallelize": 6.0, "accumulate": 4.0,
              "stage": 3.0, "unroll": 3.0, "interchange": 2.5, "fission": 2.0, "fuse": 2.0,
              "split": 1.5, "hoist": 1.5, "reorder": 1.0, "merge": 1.0, "layout": 1.0,
              "expand": 1.0, "materialize": 0.5, "inline": 0.5, "bind": 0.0}
SPLIT_FACTORS = {4, 8, 16, 32, 64, 128, 256}
# a split alone changes the code only where the compiler sees the new inner loop's constant
# extent (unrolling, vectorizing with a runtime alias check): that is the innermost loops';
# an outer loop's split pays only with an interchange after it (the tile macros do both), so
# a one-step agent whose first round held the outer splits measured the root again and again
INNER_SPLIT_BONUS = 0.5
# re-timings of the root and the best state at the end: with 3, a state no faster than the
# root passes (all its timings below all the root's) by chance 1 time in 20 (C(6,3)), with 2
# 1 time in 6 (nussinov at two threads kept a noise-level state that timed 0.96x gcc)
CONFIRM_ROUNDS = 3
MIN_CONFIRM_BUDGET = 10     # below this the whole budget goes to the search
# from this budget on, the confirmation re-times the CONFIRM_CANDIDATES fastest states, not
# only the fastest: a state timed once in the search may have been timed on a lucky draw
# (a GEMM reading B in place, not packed, took 3.1 to 4.1 ms from one fresh measuring
# child to the next, by where its pages fell, while the packed one held 3.3), and the
# fastest of many single timings is the likeliest to be such a draw
CONFIRM_CANDIDATES = 3
MIN_CANDIDATES_BUDGET = 100
MIN_GAIN = 0.02             # a kept state's median re-timing is at least this much below the root's


def default_prior(program, moves) -> list:
    """Generic knowledge: macros first, then vectorize/parallelize, ...; among tiles the
    ones the register model ranks higher for the target (``Move.bonus``) a little ahead;
    among splits those of innermost loops ahead of the others (``INNER_SPLIT_BONUS``)."""
    innermost = {l.iterator for l in ir.loops(program)
                 if not any(isinstance(s, ir.Loop) for s in ir.walk_stmts(l.body))}
    return [KIND_PRIOR.get(m.kind, 1.0) + (m.bonus if m.kind == "macro" else 0.0)
            + (INNER_SPLIT_BONUS if m.kind == "split" and m.steps[0].split()[1] in innermost
               else 0.0)
            for m in moves]


def searched_actions(program, gpu: bool = False) -> list:
    """The legal actions an agent considers (deterministic order): all but ``bind`` without
    a GPU, ``divide`` (alone it changes only how a buffer's indices are computed; it pays
    with a ``layout`` after it, a pair no single move makes), splits by factors outside
    SPLIT_FACTORS, and unrolls that would copy out loops (``copies_loops``)."""
    return [a for a in actions(program)
            if not (a.kind == "bind" and not gpu) and a.kind != "divide"
            and not (a.kind == "split" and int(a.text.split()[-1]) not in SPLIT_FACTORS)
            and not (a.kind == "unroll" and copies_loops(program, a.text.split()[-1]))]


def copies_loops(program, name: str) -> bool:
    """True when unrolling loop ``name`` would copy out a loop that stays a loop (neither
    unrolled nor vectorized inside it): the copies run one after the other, so they add no
    independent work for the core to overlap, only code for the compiler to optimise (an
    outer loop of 64 iterations around an int8 matmul tile took gcc 3.7 s instead of 0.6)."""
    loop, _ = find_loop(program, name)
    return any(not {"unroll", "vector"} & set(inner.annotations)
               for inner in ir.loops(loop.body))


def candidate_moves(program, prior: Optional[Callable] = None, gpu: bool = False,
                    macros: bool = True, target=None, threads=None) -> list:
    """The moves of a state, best-ranked first (deterministic); macros sized for ``target``
    (the evaluator's CPU target; None: this machine's) and its thread count."""
    moves = macro_moves(program, target=target, threads=threads) if macros else []
    moves += [Move(a.text, (a.text,), a.kind) for a in searched_actions(program, gpu)]
    scores = (prior or default_prior)(program, moves)
    order = sorted(range(len(moves)), key=lambda i: -scores[i])
    return [moves[i] for i in order]


class Session:
    """One search's measurements (see the module docstring)."""

    def __init__(self, agent: str, root, evaluator, budget: int, on_event=None,
                 should_stop=None):
        self.agent, self.root, self.evaluator, self.budget = agent, root, evaluator, budget
        self.on_event, self.should_stop = on_event, should_stop
        self.states = SHARED
        self.clock = PhaseClock()
        if hasattr(evaluator, "phases"):
            evaluator.phases = self.clock
        self.result = SearchResult(agent, root.name, root)
        self.by_steps: dict = {}           # steps -> Trial
        self._seen_states: dict = {}       # canonical IR hash -> steps
        self._seen_code: set = set()
        self._code_keys: dict = {}
        self._started = time.monotonic()
        self.stopped = False
        confirms = callable(getattr(evaluator, "remeasure", None)) and budget >= MIN_CONFIRM_BUDGET
        self.candidates = CONFIRM_CANDIDATES if budget >= MIN_CANDIDATES_BUDGET else 1
        self.reserve = (1 + self.candidates) * CONFIRM_ROUNDS if confirms else 0

    # ------------------------------------------------------------------ state

    @property
    def used(self) -> int:
        return len(self.result.trials)

    @property
    def done(self) -> bool:
        if self.used >= self.budget - self.reserve or self.stopped:
            return True
        if self.should_stop is not None and self.should_stop():
            self.stopped = self.result.stopped = True
        return self.stopped

    def program(self, steps: tuple):
        with self.clock.phase("replay"):
            return self.states.program(self.root, steps)

    def time_of(self, steps: tuple) -> Optional[float]:
        trial = self.by_steps.get(tuple(steps))
        return trial.median_s if trial is not None else None

    @property
    def best(self) -> Trial:
        return self.result.best

    def reward(self, steps: tuple) -> float:
        """log(baseline / time) of a measured state; -1 for a failed one."""
        t, base = self.time_of(steps), self.result.baseline.median_s if self.result.trials else None
        return math.log(base / t) if t and base else -1.0

    def fresh(self, steps: tuple) -> bool:
        """True when these steps are legal and lead to a state not measured yet."""
        steps = tuple(steps)
        if steps in self.by_steps:
            return False
        try:
            program = self.program(steps)
        except DojoError:
            return False
        if program_hash(program) in self._seen_states:
            return False
        key = self.code_key(steps)
        return key is None or key not in self._seen_code

    def code_key(self, steps: tuple):
        """The evaluator's code key of a state (memoized; None when it has none)."""
        steps = tuple(steps)
        if steps not in self._code_keys:
            code_key = getattr(self.evaluator, "code_key", None)
            self._code_keys[steps] = code_key(self.root, steps) if code_key is not None else None
        return self._code_keys[steps]

    # ------------------------------------------------------------------ measuring

    def baseline(self) -> Trial:
        if not self.result.trials:
            self.measure([()])
        return self.result.baseline

    def measure(self, candidates) -> list:
        """Measure the fresh ones among candidate step tuples (in order, within the budget,
        in one evaluate_many call); [Trial] of the ones measured."""
        batch, keys = [], set()
        for steps in candidates:
            steps = tuple(steps)
            if len(batch) >= self.budget - self.reserve - self.used:
                break
            if steps in batch or not self.fresh(steps):
                continue
            key = (program_hash(self.program(steps)), self.code_key(steps))
            if key[0] in {k[0] for k in keys} or (key[1] is not None and key[1] in {k[1] for k in keys}):
                continue
            keys.add(key)
            batch.append(steps)
        if not batch or self.done:
            return []
        # as many at once as the evaluator measures in parallel (its runners), so that
        # should_stop is polled between measurements and every answer asked for is recorded
        width = max(1, len(getattr(self.evaluator, "runners", ()) or ()))
        prepare = getattr(self.evaluator, "prepare", None)
        if prepare is not None and width < len(batch):
            prepare([(self.root, s) for s in batch])     # e.g. compile them all in parallel
        trials = []
        for start in range(0, len(batch), width):
            chunk = batch[start:start + width]
            answers = self.evaluator.evaluate_many([(self.root, s) for s in chunk])
            trials.extend(self._record(steps, m) for steps, m in zip(chunk, answers))
            if self.should_stop is not None and self.should_stop():
                self.stopped = self.result.stopped = True
                break
        return trials

    def measure_one(self, steps, ahead=()) -> Optional[Trial]:
        """Measure one state; ``ahead``: states likely to be measured next, handed to the
        evaluator's ``prepare`` with it (compiled beside it) but not measured now."""
        prepare = getattr(self.evaluator, "prepare", None)
        if prepare is not None and ahead and self.fresh(steps):
            prepare([(self.root, tuple(s)) for s in (steps, *ahead)])
        trials = self.measure([steps])
        return trials[0] if trials else None

    def _record(self, steps: tuple, m: Measurement) -> Trial:
        trial = Trial(steps, m)
        self.result.trials.append(trial)
        self.by_steps[steps] = trial
        self._seen_states[program_hash(self.program(steps))] = steps
        key = self.code_key(steps)
        if key is not None:
            self._seen_code.add(key)
        if self.on_event is not None:
            self.on_event(SearchEvent(self.agent, len(self.result.trials) - 1, trial,
                                      self.result.best, self.budget))
        return trial

    def confirm(self) -> None:
        """Re-time the root and the fastest trials together (the ``candidates`` fastest of
        the search, CONFIRM_ROUNDS interleaved rounds, fresh measurements that the reserve
        paid for) and keep the candidate with the lowest median re-timing among those
        whose every timing is below every one of the root's and whose median is MIN_GAIN
        below the root's; none passing, the root is kept: a state that looked faster by
        less than the timings' spread, or by less than noise on a shared machine (a 0.2%
        margin was seen to turn into a 3% loss when timed again), is not worth its steps.
        A search stopped early (its time ran out, or it was asked to stop) is confirmed
        too: that is when its best was measured least."""
        ranked = sorted((t for t in self.result.trials if t.median_s is not None and t.steps),
                        key=lambda t: (t.median_s, len(t.steps)))[:self.candidates]
        if not self.reserve or not ranked:
            return
        with self.clock.phase("confirm"):
            root_s, *timings = self.evaluator.remeasure(
                [(self.root, ())] + [(self.root, t.steps) for t in ranked], rounds=CONFIRM_ROUNDS)
        passing = [(statistics.median(best_s), k) for k, best_s in enumerate(timings)
                   if root_s and best_s and max(best_s) < min(root_s) and
                   statistics.median(best_s) <= (1 - MIN_GAIN) * statistics.median(root_s)]
        chosen = min(passing)[1] if passing else 0
        self.result.confirmation = {
            "steps": list(ranked[chosen].steps), "root_s": root_s, "best_s": timings[chosen],
            "kept": "best" if passing else "root",
            "candidates": [{"steps": list(t.steps), "search_s": t.median_s, "retimed_s": r}
                           for t, r in zip(ranked, timings)]}

    def finish(self) -> SearchResult:
        self.confirm()
        self.result.wall_s = time.monotonic() - self._started
        self.result.stopped = self.stopped
        self.result.phases = self.clock.totals()
        if hasattr(self.evaluator, "phases"):
            self.evaluator.phases = None
        return self.result

    # ------------------------------------------------------------------ moves

    def moves(self, steps: tuple, prior=None, macros: bool = True) -> list:
        """candidate_moves of the state at steps, as (move, child steps) pairs; none for
        steps that are not legal (a rollout may draw a macro whose steps do not replay)."""
        gpu = bool(getattr(self.evaluator, "gpu", False))
        try:
            program = self.program(steps)
        except DojoError:
            return []
        target = getattr(self.evaluator, "target", None)
        with self.clock.phase("moves"):
            return [(m, tuple(steps) + m.steps) for m in
                    candidate_moves(program, prior=prior, gpu=gpu, macros=macros,
                                    target=target,
                                    threads=getattr(self.evaluator, "threads", None))]

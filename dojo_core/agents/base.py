"""The contract every search agent and evaluator keeps (issue 7; DESIGN.md section 8).

An *evaluator* turns a program state (the root kernel plus a tuple of step texts) into a
``Measurement``: compiled and timed locally, sent to a runner through the server, or
predicted by a cost model.  An *agent* explores step sequences from a root program within a
budget of measurements and returns a ``SearchResult``: every state it measured, in the order
it measured them, which ``to_history()`` turns into an ordinary PerfDojo history (the
``perfdojo-history`` export format, version 1, that ``POST /api/sessions/import`` replays),
so that every agent run can be opened, replayed and continued in the editor.

Budget rule: ``budget`` counts the measurements an agent asks for, cache hits included
(a cache hit is free in time, not in budget: agents are compared at equal budgets).
The baseline (the root, no steps) is measured first and counts as one measurement.

Events: ``on_event(SearchEvent)`` is called after every measurement, in order, from the
agent's thread; ``should_stop()`` is polled between measurements and a True ends the search
early with what was found so far (``SearchResult.stopped`` is then True).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence

from .. import ir

EXPORT_FORMAT = "perfdojo-history"
EXPORT_VERSION = 1


@dataclass(frozen=True)
class Measurement:
    """One evaluation of one state.  ``median_s`` is None when the state could not be
    measured (compile error, crash, timeout: ``error`` says which) or failed verification."""
    median_s: Optional[float]
    verified: bool = True
    error: Optional[str] = None
    min_s: Optional[float] = None
    max_s: Optional[float] = None
    source: str = "measured"          # "measured" | "model" | "cache"
    runner: str = "local"             # evaluator fingerprint / runner name

    @property
    def ok(self) -> bool:
        return self.median_s is not None and self.verified and self.error is None


class Evaluator(Protocol):
    """Measures program states.  ``fingerprint`` names the hardware + toolchain, the key of
    the measurement cache together with the program's hash."""
    fingerprint: str

    def evaluate(self, program: ir.Program, steps: tuple) -> Measurement: ...

    def evaluate_many(self, items: Sequence[tuple]) -> list:
        """[(program, steps), ...] -> [Measurement, ...] in the same order; evaluators that
        can measure in parallel (several runners) do so."""
        ...


@dataclass(frozen=True)
class Trial:
    """One measured state of a search: its steps from the root, in order."""
    steps: tuple
    measurement: Measurement

    @property
    def median_s(self) -> Optional[float]:
        return self.measurement.median_s if self.measurement.ok else None


@dataclass(frozen=True)
class SearchEvent:
    agent: str
    index: int                        # 0 = the baseline
    trial: Trial
    best: Trial
    budget: int


@dataclass
class SearchResult:
    agent: str
    kernel: str
    root: ir.Program
    trials: list = field(default_factory=list)      # [Trial], the baseline first
    stopped: bool = False
    wall_s: float = 0.0
    phases: dict = field(default_factory=dict)      # PhaseClock.totals() of the search
    confirmation: Optional[dict] = None             # Session.confirm's timings and choice

    @property
    def baseline(self) -> Trial:
        return self.trials[0]

    @property
    def best(self) -> Trial:
        """The trial a confirmation kept (re-timing the root and the fastest trials
        together: the root when none was faster beyond the spread of the timings), else
        the fastest measured trial."""
        if self.confirmation is not None:
            if self.confirmation["kept"] == "root":
                return self.trials[0]
            kept = tuple(self.confirmation["steps"])
            for t in self.trials:
                if tuple(t.steps) == kept:
                    return t
        ok = [t for t in self.trials if t.median_s is not None]
        return min(ok, key=lambda t: (t.median_s, len(t.steps))) if ok else self.trials[0]

    def best_within(self, n: int) -> Trial:
        """The best trial among the first n measurements (for budget curves)."""
        ok = [t for t in self.trials[:n] if t.median_s is not None]
        return min(ok, key=lambda t: (t.median_s, len(t.steps))) if ok else self.trials[0]

    @property
    def speedup(self) -> float:
        b, t = self.baseline.median_s, self.best.median_s
        return b / t if b and t else math.nan

    def summary(self) -> dict:
        """The JSON object of ``python -m dojo_core search`` (DESIGN.md section 9)."""
        return {
            "agent": self.agent, "kernel": self.kernel,
            "best_steps": list(self.best.steps),
            "best_median_s": self.best.median_s,
            "baseline_median_s": self.baseline.median_s,
            "speedup": self.speedup,
            "measurements": len(self.trials),
            "stopped": self.stopped, "wall_s": self.wall_s,
            "phases": self.phases, "confirmation": self.confirmation,
        }

    def to_history(self, title: str = "") -> dict:
        """The search as a perfdojo-history (version 1): the tree of every measured state's
        path (shared prefixes are shared steps), ``current`` at the best state, and the
        measurements under ``results`` of the steps that were measured.  Every step is legal
        by construction; an importer replays them anyway."""
        from ..printer import print_program
        from ..transforms import apply_step

        steps = [{"index": 0, "parent": None, "text": "", "ir": print_program(self.root),
                  "results": []}]
        index_of = {(): 0}
        programs = {(): self.root}
        for trial in self.trials:
            for depth in range(1, len(trial.steps) + 1):
                path = tuple(trial.steps[:depth])
                if path in index_of:
                    continue
                program = apply_step(programs[path[:-1]], path[-1])
                programs[path] = program
                index_of[path] = len(steps)
                steps.append({"index": len(steps), "parent": index_of[path[:-1]],
                              "text": path[-1], "ir": print_program(program), "results": []})
            m = trial.measurement
            steps[index_of[tuple(trial.steps)]]["results"].append({
                "median_s": m.median_s, "min_s": m.min_s, "max_s": m.max_s,
                "verified": m.verified, "error": m.error, "source": m.source,
                "runner": m.runner, "agent": self.agent})
        return {
            "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
            "kernel": self.kernel or None,
            "title": title or f"{self.agent} search on {self.kernel}",
            "source": print_program(self.root), "sizes": dict(self.root.size_values),
            "current": index_of[tuple(self.best.steps)],
            "steps": steps,
        }


class Agent:
    """Base class: subclasses set ``name`` and implement ``search``."""
    name = "agent"

    def search(self, root: ir.Program, evaluator: Evaluator, budget: int, *,
               seed: int = 0, on_event: Optional[Callable] = None,
               should_stop: Optional[Callable] = None) -> SearchResult:
        raise NotImplementedError

"""Where a search's time goes: a clock of exclusive phase times.

``PhaseClock.phase(name)`` is a context manager; time spent in a phase entered inside
another counts for the inner one only (the outer one is paused), so the phases never
double-count and their sum is at most the wall time. ``totals()`` gives seconds and
entry counts per phase. The search session times ``moves`` (candidate generation) and
``replay`` (applying steps); the local evaluator times ``codegen``, ``compile``,
``reference`` (the untransformed kernel's outputs, once per root) and ``measure`` (running,
verifying and timing the kernel in the measuring process).
"""
from __future__ import annotations

import time
from contextlib import contextmanager


class PhaseClock:
    def __init__(self):
        self._seconds: dict = {}
        self._counts: dict = {}
        self._stack: list = []          # [(name, started at)]

    @contextmanager
    def phase(self, name: str):
        now = time.perf_counter()
        if self._stack:
            outer, since = self._stack[-1]
            self._seconds[outer] = self._seconds.get(outer, 0.0) + now - since
        self._stack.append((name, now))
        self._counts[name] = self._counts.get(name, 0) + 1
        try:
            yield
        finally:
            end = time.perf_counter()
            _, since = self._stack.pop()
            self._seconds[name] = self._seconds.get(name, 0.0) + end - since
            if self._stack:
                self._stack[-1] = (self._stack[-1][0], end)

    def totals(self) -> dict:
        """{phase: {"s": seconds, "n": entries}}, phases in first-entered order."""
        return {name: {"s": round(self._seconds.get(name, 0.0), 6), "n": self._counts[name]}
                for name in self._counts}


@contextmanager
def timed(clock, name: str):
    """``clock.phase(name)``, or nothing when there is no clock."""
    if clock is None:
        yield
    else:
        with clock.phase(name):
            yield

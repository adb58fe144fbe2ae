"""Evaluators: measure program states locally or through the server.

``LocalEvaluator(min_time=0.05, threads=None, timeout=60, store=None, target=None,
inputs=None)``
    generates C, compiles it through the compile cache, runs it once and compares its
    outputs with the untransformed kernel's (computed ONCE per root: the interpreter at
    small sizes, the compiled root otherwise), then times it in a persistent child process
    (``measure_worker``).  Guarantees: every failure (code generation, compile error,
    crash, timeout, wrong outputs) is a ``Measurement`` with ``error`` set (and
    ``verified`` False for wrong outputs), never an exception; every real measurement
    appends a record to the ``RecordStore`` (records.py); a state already measured with the
    same fingerprint (in the store, or earlier in this process) is answered from the cache
    (``source="cache"``), and so is a state whose generated C is identical to a measured one.
    ``code_key(root, steps)`` is the hash of the generated C (None when it cannot be
    generated): agents use it to skip steps that cannot change the code.
    ``remeasure(items, rounds=2, fresh=False)`` times states again, uncached, interleaved in
    rounds; ``fresh`` makes them in a measuring child of their own. ``inputs(root)``
    gives the input arrays (default ``kernels.random_inputs(root, 0)``: kernels whose
    inputs need structure, such as a positive definite matrix, bring their own).
    ``phases``: a ``phases.PhaseClock`` (set by the search session) that it reports its
    codegen, compile, reference and measure times to. ``prepare(items)`` compiles a batch
    of states in parallel, one compiler per core, before any of them is timed
    (``evaluate_many`` does it; the search session does it for every batch it measures).

Measuring through the server: ``server_evaluator.ServerEvaluator``; the cache of
measurements both use: ``measurement_cache.MeasurementCache``.
"""
from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

from .. import ir
from ..errors import DojoError
from ..records import RecordStore, machine_fingerprint, program_hash, text_hash
from ..replay_cache import SHARED
from .base import Measurement
from .measurement_cache import (MeasurementCache, failed_measurement, measurement_record,
                                one_line)
from .phases import timed


def compile_workers() -> int:
    """How many compilers ``LocalEvaluator.prepare`` runs at once: the cores this process
    may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class LocalEvaluator:
    """Compile, verify and time on this machine (see the module docstring)."""

    def __init__(self, min_time: float = 0.05, threads: Optional[int] = None,
                 timeout: float = 60, store: Optional[RecordStore] = None, target=None,
                 compile_timeout: float = 120, inputs=None):
        from ..codegen import get_target
        self.min_time, self.threads, self.timeout = min_time, threads, timeout
        self.compile_timeout = compile_timeout
        self.inputs = inputs            # root -> input arrays (None: kernels.random_inputs)
        self.target = get_target(target)
        basis = machine_fingerprint()
        if threads is not None or target is not None:
            basis = text_hash(f"{basis}:{self.target.name}:{threads}")[:16]
        self.fingerprint = basis
        self.runner = "local"
        self.cache = MeasurementCache(store, self.fingerprint)
        self.states = SHARED
        self._by_code: dict = {}
        self._references: dict = {}
        self._worker = None
        self._lock = threading.Lock()
        self.phases = None              # a PhaseClock the search session may set

    # ------------------------------------------------------------------ helpers

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def __del__(self):
        try:
            self.close()
        except Exception:                                               # noqa: BLE001
            pass

    def _source(self, program) -> str:
        from ..codegen import generate_c, timing_entry
        with timed(self.phases, "codegen"):
            return generate_c(program, self.target) + timing_entry(program)

    def code_key(self, root: ir.Program, steps: tuple) -> Optional[str]:
        try:
            return text_hash(self._source(self.states.program(root, steps)))
        except Exception:                                               # noqa: BLE001
            return None

    def _reference(self, root: ir.Program):
        """(root key, inputs, reference outputs) of a root, computed once."""
        key = self.states.root_key(root)
        if key not in self._references:
            with timed(self.phases, "reference"):
                inputs, want = self._untransformed_outputs(root)
            self._references.clear()
            self._references[key] = (inputs, {k: v.copy() for k, v in want.items()})
        return (key, *self._references[key])

    def _untransformed_outputs(self, root: ir.Program) -> tuple:
        from .. import harness
        from ..kernels import random_inputs
        inputs = self.inputs(root) if self.inputs is not None else random_inputs(root, 0)
        if harness.estimated_work(root) <= harness.INTERP_LIMIT:
            from ..interp import run
            return inputs, run(root, inputs)
        return inputs, harness.run_c(root, inputs, target=self.target,
                                     timeout=max(self.timeout, 60))

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, program: ir.Program, steps: tuple = ()) -> Measurement:
        with self._lock:
            return self._evaluate(program, tuple(steps))

    def evaluate_many(self, items: Sequence[tuple]) -> list:
        self.prepare(items)
        return [self.evaluate(program, steps) for program, steps in items]

    def prepare(self, items: Sequence[tuple]) -> None:
        """Compile the (root, steps) states not measured yet into the compile cache, one
        compiler per core at once, so that ``evaluate`` finds them built. Nothing runs or is
        timed meanwhile (a compiler beside a timed kernel would share its cores and caches);
        a state that fails to build here fails again, with its reason, when evaluated."""
        from .. import harness
        if len(items) < 2 or compile_workers() < 2:
            return                      # nothing to overlap (a search's chunks of one)
        with self._lock:
            states = []
            for root, steps in items:
                try:
                    state = self.states.program(root, tuple(steps))
                except DojoError:
                    continue
                if self.cache.lookup(program_hash(state)) is None:
                    states.append(state)
        workers = min(len(states), compile_workers())
        if workers < 2:
            return

        def build(state):
            try:
                harness.build(state, self.target, timeout=self.compile_timeout)
            except Exception:                                           # noqa: BLE001
                pass
        with timed(self.phases, "compile"), ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(build, states))

    def _evaluate(self, root, steps) -> Measurement:
        from .. import harness
        from .measure_worker import MeasureWorker
        try:
            state = self.states.program(root, steps)
        except DojoError as exc:
            return failed_measurement(f"illegal step: {exc.message}", self.runner)
        state_hash = program_hash(state)
        hit = self.cache.lookup(state_hash)
        if hit is not None:
            return hit
        try:
            source = self._source(state)
        except Exception as exc:                                        # noqa: BLE001
            return self._store(root, steps, state_hash,
                               failed_measurement(one_line(exc), self.runner))
        code_hash = text_hash(source)
        if code_hash in self._by_code:
            m = self._by_code[code_hash]
            return Measurement(m.median_s, m.verified, m.error, m.min_s, m.max_s,
                               source="cache", runner=m.runner)
        try:
            with timed(self.phases, "compile"):
                lib = harness.build(state, self.target, timeout=self.compile_timeout)
            key, inputs, reference = self._reference(root)
        except Exception as exc:                                        # noqa: BLE001
            return self._store(root, steps, state_hash,
                               failed_measurement(one_line(exc), self.runner), code_hash)
        if self._worker is None:
            self._worker = MeasureWorker()
        params = self._timing()
        with timed(self.phases, "measure"):
            answer = self._worker.measure(root_key=key, inputs=inputs, reference=reference,
                                          program=state, path=lib.path, params=params,
                                          threads=self.threads, timeout=self.timeout)
        if "error" in answer:
            m = failed_measurement(answer["error"], self.runner)
        elif not answer["verified"]:
            worst = max(answer["errors"].values(), default=math.inf)
            m = failed_measurement(f"outputs differ from the untransformed kernel (worst error "
                                   f"{worst:.3g} x the tolerance)", self.runner, verified=False)
        else:
            m = Measurement(answer["median_s"], True, None, answer["min_s"], answer["max_s"],
                            runner=self.runner)
        return self._store(root, steps, state_hash, m, code_hash,
                           compiler=lib.compiled.compiler, flags=list(lib.compiled.flags),
                           threads=answer.get("threads"))

    def _timing(self) -> dict:
        """The measuring child's timing parameters, the same for a search and its re-timings."""
        return dict(min_time=self.min_time, min_reps=3, warmup=1, threads=self.threads,
                    flush_cache=False)

    def remeasure(self, items: Sequence[tuple], rounds: int = 2, fresh: bool = False) -> list:
        """Fresh timings of (root, steps) states, never answered from a cache, interleaved
        over ``rounds`` so that a drift of the machine hits every state alike:
        [[median_s per round] per item], None for an item that fails or whose outputs no
        longer match the untransformed kernel's.  ``fresh``: every timing of this call is
        made in a measuring child started for it and ended when it returns (a kernel that
        crashes it gets another fresh one), so that nothing measured before shares its
        process; otherwise in the evaluator's persistent child."""
        from .measure_worker import MeasureWorker
        if not fresh:
            return self._remeasure(items, rounds, None)
        worker = MeasureWorker()
        try:
            return self._remeasure(items, rounds, worker)
        finally:
            worker.close()

    def _remeasure(self, items, rounds, worker) -> list:
        from .. import harness
        from .measure_worker import MeasureWorker
        with self._lock:
            built = []
            for root, steps in items:
                try:
                    state = self.states.program(root, tuple(steps))
                    with timed(self.phases, "compile"):
                        lib = harness.build(state, self.target, timeout=self.compile_timeout)
                    built.append((root, state, lib))
                except Exception:                                       # noqa: BLE001
                    built.append(None)
            if worker is None:
                if self._worker is None:
                    self._worker = MeasureWorker()
                worker = self._worker
            times = [[] if entry is not None else None for entry in built]
            params = self._timing()
            for _ in range(rounds):
                for k, entry in enumerate(built):
                    if times[k] is None:
                        continue
                    root, state, lib = entry
                    key, inputs, reference = self._reference(root)
                    with timed(self.phases, "confirm"):
                        answer = worker.measure(
                            root_key=key, inputs=inputs, reference=reference, program=state,
                            path=lib.path, params=params, threads=self.threads,
                            timeout=self.timeout)
                    if "error" in answer or not answer["verified"]:
                        times[k] = None
                    else:
                        times[k].append(answer["median_s"])
            return times

    def _store(self, root, steps, state_hash, m: Measurement, code_hash=None, **extra):
        if code_hash is not None:
            self._by_code[code_hash] = m
        self.cache.add(measurement_record(root, steps, state_hash, m, **extra))
        return m

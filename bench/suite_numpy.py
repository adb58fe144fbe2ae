"""The numpy peer of bench/suite.py: a child process per thread count that runs the suite
entries' numpy references, and the parent's handle on it.

Owns ``worker_main(threads)``, the child (started as ``bench/suite.py --worker THREADS``):
it loads the BLAS, limits the thread pools, says hello (numpy's version, threadpoolctl's
report, the unset variables it found), then answers ``hello``, ``prepare`` (a kernel in a
dtype at sizes: run the reference once on the suite's inputs, on arrays of the row's dtype
("native") when the kernel is floating-point, else or when that disagrees with the
baseline's ``expected`` outputs on float64 inputs; say which ``mode`` was kept and whether
it was verified) and ``time`` (``peers.time_fn`` of a prepared reference); and
``NumpyWorker``, the parent's handle, every call of which has a timeout.

Guarantees: the child's environment is ``peers.peer_env`` (never the parent's); a failing
message answers ``{"ok": False, "error"}`` and the child goes on; a call that times out or
breaks the pipe kills the child and the next call starts a new one.
"""
from __future__ import annotations

import math
import select
from pathlib import Path

import numpy as np

from bench.common import short
from bench.peers import (library_isa_here, limit_pools, recv, send, serve, spawn, stop,
                         time_fn, unset_here, worker_pipes)
from dojo_core import harness, suite

SUITE_SCRIPT = Path(__file__).resolve().parent / "suite.py"


def worker_main(threads: int) -> None:
    """The child (module docstring), at ``threads`` threads."""
    inp, out = worker_pipes()
    np.zeros((8, 8)) @ np.zeros((8, 8))                        # load the BLAS
    limiter, info, missing = limit_pools(threads)
    tp_error = (None if missing is None else
                f"threadpoolctl not installed ({missing}): threads set by environment only")
    send(out, {"threads": threads, "numpy": np.__version__, "threadpoolctl": info,
               "threadpoolctl_error": tp_error, "env_unset": unset_here(),
               "library_isa": library_isa_here()})
    prepared = {}

    def handle(msg):
        if msg["op"] == "hello":
            return {"ok": True}
        key = (msg["kernel"], msg["dtype"], tuple(sorted(msg["sizes"].items())))
        if msg["op"] == "prepare":
            entry = suite.info(msg["kernel"])
            program = suite.load(msg["kernel"], msg["dtype"], msg["sizes"])
            inputs = suite.random_inputs(msg["kernel"], program, 0)
            sizes = program.size_values
            integral = any(np.dtype(v.dtype).kind in "iu" for v in inputs.values())
            tried = {}
            for mode in (["native"] if not integral else []) + ["float64"]:
                x = ({k: np.array(v) for k, v in inputs.items()} if mode == "native" else
                     {k: np.array(v, dtype=np.float64) for k, v in inputs.items()})
                try:
                    got = entry.reference({k: v.copy() for k, v in x.items()}, sizes)
                except Exception as exc:                          # noqa: BLE001
                    if mode != "native":
                        raise
                    tried[mode] = {"error": short(exc), "errors": {"*": math.inf}}
                    continue
                dtypes = sorted({str(np.asarray(v).dtype) for v in got.values()})
                errors = harness.compare(
                    {k: np.asarray(v) for k, v in got.items()}, msg["expected"], program)
                tried[mode] = {"errors": errors, "out_dtypes": dtypes}
                if all(e <= 1.0 for e in errors.values()):
                    break
            fn = (lambda entry=entry, x=x, sizes=sizes: entry.reference(x, sizes))
            prepared[key] = fn
            verified = all(e <= 1.0 for e in tried[mode]["errors"].values())
            return {"ok": True, "mode": mode, "verified": verified, "tried": tried,
                    "max_error": max(tried[mode]["errors"].values(), default=0.0)}
        if msg["op"] == "time":
            return {"ok": True, **time_fn(prepared[key], msg["min_time"])}
        raise ValueError(f"unknown op {msg['op']!r}")

    serve(inp, out, handle, short)
    del limiter


class NumpyWorker:
    """The numpy child at a fixed thread count; every call has a timeout (the child is
    killed and the next call starts a new one)."""

    def __init__(self, threads: int, env_extra: dict | None = None):
        self.threads = threads
        self.env_extra = dict(env_extra or {})     # e.g. the BLAS kernel of a narrower target
        self.proc = None
        self.hello = None

    def _start(self, timeout: float):
        self.proc = spawn(SUITE_SCRIPT, self.threads, env_extra=self.env_extra)
        self.hello = self._read(timeout)

    def _read(self, timeout: float):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.kill()
            raise TimeoutError(f"numpy worker gave no answer within {timeout:g} s")
        return recv(self.proc.stdout)

    def call(self, timeout: float, **msg) -> dict:
        try:
            if self.proc is None or self.proc.poll() is not None:
                self._start(timeout)
            send(self.proc.stdin, msg)
            return self._read(timeout)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            self.kill()
            return {"ok": False, "error": short(exc)}

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        if self.proc is None:
            return
        stop(self.proc)
        self.proc = None

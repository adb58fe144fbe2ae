"""The numpy/PyTorch child process of bench/libraries.py (and bench/library.py), and the
parent's handle on it.

Owns ``worker_main(threads, use_torch, numpy_call, torch_call)``, the child: it loads the
BLAS (and PyTorch at ``threads`` threads unless ``use_torch`` is False), limits the thread
pools, says hello (versions, threadpoolctl's report, the unset variables it found), then
answers ``check`` (run once, compare the outputs with ``expected``: worst error over the
harness tolerance per array) and ``time`` (``peers.time_fn``) for a case and a library,
preparing each (case, library) once; and ``Worker``, the parent's handle that starts one
child per thread count (``SCRIPT --worker THREADS [--no-torch]``).

Guarantees: the child's environment is ``peers.peer_env`` (never the parent's);
a failing case answers ``{"ok": False, "error"}`` and the child goes on; PyTorch missing
or disabled is reported in the hello, never an error of the child.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.peer_kernels import numpy_fn, torch_fn
from bench.peers import (limit_pools, recv, send, serve, spawn, stop, time_fn, unset_here,
                         worker_pipes)
from dojo_core import harness
from dojo_core.kernels import load_kernel, random_inputs

LIBRARIES_SCRIPT = Path(__file__).resolve().parent / "libraries.py"


def worker_main(threads: int, use_torch: bool, numpy_call=numpy_fn, torch_call=torch_fn) -> None:
    """The child (module docstring); ``numpy_call``/``torch_call``: ``peer_kernels``-style
    builders of a case's callable (bench/library.py passes its own, which know more
    kernels)."""
    inp, out = worker_pipes()
    torch, torch_error = None, None
    if use_torch:
        try:    # an optional dependency, loaded only in the child that times it
            import torch
            torch.set_num_threads(threads)
        except ImportError as exc:
            torch, torch_error = None, f"not installed ({exc})"
    else:
        torch_error = "disabled (--no-torch)"
    np.zeros((8, 8), np.float32) @ np.zeros((8, 8), np.float32)   # load the BLAS
    limiter, info, missing = limit_pools(threads)
    tp_error = (None if missing is None else
                f"threadpoolctl not installed ({missing}); thread counts set by environment only")
    hello = {"threads": threads, "threadpoolctl": info, "threadpoolctl_error": tp_error,
                  "numpy": np.__version__,
                  "torch": torch.__version__ if torch is not None else None,
                  "torch_error": torch_error,
                  "torch_threads": torch.get_num_threads() if torch is not None else None,
                  "torch_isa": (torch.backends.cpu.get_cpu_capability()
                                if torch is not None else None),
                  "env_unset": unset_here()}
    send(out, hello)
    prepared = {}

    def handle(msg):
        key = (msg["case"], msg["lib"])
        if key not in prepared:
            program = load_kernel(msg["kernel"], msg["sizes"])
            x = random_inputs(program, 0)
            if msg["lib"] == "torch":
                if torch is None:
                    raise RuntimeError(f"torch {torch_error}")
                prepared[key] = (program,) + torch_call(torch, msg["kernel"], x, msg["sizes"])
            else:
                prepared[key] = (program,) + numpy_call(np, msg["kernel"], x, msg["sizes"])
        program, fn, outputs = prepared[key]
        if msg["op"] == "check":
            fn()
            got = {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in outputs.items()}
            return {"ok": True, "errors": harness.compare(got, msg["expected"], program)}
        if msg["op"] == "time":
            if torch is not None:
                with torch.inference_mode():
                    return {"ok": True, **time_fn(fn, msg["min_time"])}
            return {"ok": True, **time_fn(fn, msg["min_time"])}
        return None

    serve(inp, out, handle, lambda exc: f"{type(exc).__name__}: {exc}")
    del limiter


class Worker:
    """A numpy/torch child process at a fixed thread count, started as ``script``
    (bench/libraries.py by default) with ``--worker``."""

    def __init__(self, threads: int, use_torch: bool, script=LIBRARIES_SCRIPT,
                 env_extra: dict | None = None):
        self.proc = spawn(script, threads, *([] if use_torch else ["--no-torch"]),
                          env_extra=env_extra)
        self.hello = recv(self.proc.stdout)

    def call(self, **msg):
        send(self.proc.stdin, msg)
        return recv(self.proc.stdout)

    def close(self):
        stop(self.proc)

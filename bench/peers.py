"""Child processes that run peer libraries (numpy, PyTorch) for the bench scripts.

``bench/libraries.py``, ``bench/library.py`` and ``bench/suite.py`` time numpy (and PyTorch)
in a child process per thread count, so that the child's environment can differ from
ours. This module owns what they share:

* the environment of a child (``peer_env``): ``UNSET`` removed (set on some machines, they
  make OpenBLAS take a slower kernel) and ``THREAD_VARS`` set to the thread count, plus,
  for a target narrower than the host, the libraries' code paths of its width
  (``blas_env``);
* starting and stopping one (``spawn``: ``SCRIPT --worker THREADS ...`` with this checkout
  on ``PYTHONPATH``; ``stop``);
* the pipe protocol, length-prefixed pickles (``send``, ``recv``), and the worker's side of
  it (``worker_pipes``, ``serve``: one answer per message until ``quit`` or end of input);
* the thread-pool limit of threadpoolctl, when installed (``limit_pools``);
* the timing loop every contender uses (``time_fn``) and the pause between contenders
  (``PAUSE_S``).

Guarantees: nothing here imports numpy or a peer library; the parent's own environment is
never changed; a worker's stray prints go to stderr, never into the pipe.
"""
from __future__ import annotations

import os
import pickle
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
PAUSE_S = 0.3          # between contenders: OpenBLAS/OpenMP workers stop spinning


# =============================================================================== parent side

# The libraries' names for their x86 code paths by vector width: a target narrower than the
# host is compared with the libraries' code of the same width, not with the host's widest:
# OpenBLAS's kernel (numpy), and PyTorch's ATen kernels, oneDNN and MKL (torch)
X86_LIBRARY_ISAS = {
    32: {"OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2",
         "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    16: {"OPENBLAS_CORETYPE": "Nehalem", "ATEN_CPU_CAPABILITY": "default",
         "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}


def blas_env(target, host) -> dict:
    """The environment that makes numpy's and PyTorch's libraries use ``target``'s vector
    width: empty unless the target is an x86 one narrower than this host's."""
    if target.arch == "x86_64" and target.vector_bytes < host.vector_bytes \
            and target.vector_bytes in X86_LIBRARY_ISAS:
        return dict(X86_LIBRARY_ISAS[target.vector_bytes])
    return {}


def peer_env(threads: int, extra: dict | None = None) -> dict:
    """This process's environment without ``UNSET``, with ``THREAD_VARS`` = threads, then
    ``extra`` (e.g. the OpenBLAS kernel of a narrower ISA)."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    for k in THREAD_VARS:
        env[k] = str(threads)
    env.update(extra or {})
    return env


def library_isa_here() -> dict:
    """The variables of ``X86_LIBRARY_ISAS`` this process has (a child says which library
    code paths it was given)."""
    names = {k for isa in X86_LIBRARY_ISAS.values() for k in isa}
    return {k: os.environ[k] for k in sorted(names) if k in os.environ}


def unset_here() -> list:
    """The ``UNSET`` variables this process has (the children run without them)."""
    return [k for k in UNSET if k in os.environ]


def spawn(script, threads: int, *extra: str, env_extra: dict | None = None) -> subprocess.Popen:
    """``script --worker THREADS *extra`` in a child with ``peer_env(threads, env_extra)`` and
    this checkout first on ``PYTHONPATH``; its stdin and stdout are the pipe."""
    env = peer_env(threads, env_extra)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    cmd = [sys.executable, str(script), "--worker", str(threads), *extra]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def stop(proc: subprocess.Popen) -> None:
    """Ask a child to quit and wait for it (30 s); kill it when that fails."""
    try:
        send(proc.stdin, {"op": "quit"})
        proc.stdin.close()
        proc.wait(timeout=30)
    except Exception:                                                 # noqa: BLE001
        proc.kill()
        proc.wait()


# =============================================================================== the pipe

def send(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def recv(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("worker pipe closed")
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


# =============================================================================== worker side

def worker_pipes() -> tuple:
    """(input, output) binary streams of the pipe; ``sys.stdout`` goes to stderr from now on,
    so that stray prints cannot corrupt the pipe."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    return inp, out


def limit_pools(threads: int) -> tuple:
    """(limiter, threadpoolctl's report, None), or (None, [], the ImportError) when
    threadpoolctl is not installed. Call it once the BLAS is loaded; keep the limiter
    alive while timing."""
    try:        # an optional dependency (pip install .[bench]): imported only where needed
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError as exc:
        return None, [], exc
    limiter = threadpool_limits(limits=threads)
    return limiter, threadpool_info(), None


def serve(inp, out, handle, describe_error) -> None:
    """Answer messages until ``quit`` or the end of input: ``handle(msg)``'s dict (nothing
    when it returns None), or ``{"ok": False, "error": describe_error(exc)}`` when it
    raises."""
    while True:
        try:
            msg = recv(inp)
        except EOFError:
            return
        if msg["op"] == "quit":
            return
        try:
            reply = handle(msg)
        except Exception as exc:                                      # noqa: BLE001
            reply = {"ok": False, "error": describe_error(exc)}
        if reply is not None:
            send(out, reply)


def time_fn(fn, min_time: float, min_reps: int = 3, warmup: int = 1) -> dict:
    """``fn()`` after ``warmup`` calls, repeated for at least ``min_time`` seconds and
    ``min_reps`` times: {"median_s", "min_s", "reps"}."""
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "reps": len(times)}

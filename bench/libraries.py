"""PerfDojo's scheduled kernels against the libraries, in one run (a benchmark, not a test).

    python bench/libraries.py [--out results.json] [--rounds 5] [--min-time 0.15]
                              [--threads 1,2] [--cases matmul512,softmax,...] [--no-torch]
                              [--target x86-avx512,x86-avx2]

For each case -- matmul 512^3 and 1024^3, bmm (16 x 256^3), softmax 4096 x 1024, layernorm
4096 x 1024, conv2d (1 x 64 x 56 x 56, 64 filters 3 x 3, padding 1: the library kernel's
default sizes, input already padded) and attention (S = 512, D = 64) -- it measures, at one
thread and at all threads:

  naive   the untransformed library kernel, compiled C (sequential: it has no parallel
          loop, so it is timed once, at one thread, and shown in both rows)
  steps   the kernel after its ``dojo_core/kernels/NAME.steps`` schedule, or
          ``NAME.TARGET.steps`` where one exists for the target (the same file at matmul
          1024^3), compiled C, OpenMP threads set by the harness; its outputs are verified
          against the untransformed kernel (compiled C at these sizes). The target is this
          machine's, or each of ``--target`` in turn (``x86-avx512,x86-avx2`` on an AVX-512
          machine: the AVX2 target's flags turn AVX-512 off, so its code is AVX2 code); the
          table's ``isa`` column names it
  numpy   matmul/bmm via ``np.matmul`` (OpenBLAS), softmax and layernorm as numpy
          expressions (in place where numpy allows), conv2d as im2col + ``@``, attention as
          ``Q @ K.T``, softmax, ``@ V``
  torch   PyTorch CPU if installed (``torch.matmul``, ``torch.bmm``, ``torch.softmax``,
          ``F.layer_norm``, ``F.conv2d`` (oneDNN), ``F.scaled_dot_product_attention``);
          skipped cleanly when absent. Those without an ``out=`` form allocate their output
          at every call, as a user's call does; the previous result is released first, so
          that the allocator hands the same block back (kept alive, a 16 MiB result is
          mapped afresh at every call and pays a page fault per 4 KiB)

numpy and PyTorch run in child processes, one per thread count, whose environment (theirs
alone) has ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` removed (set on some of these
machines, they make OpenBLAS take a slower kernel) and ``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to the thread count; threadpoolctl (when
installed: ``pip install .[bench]``) limits the pools as well and names the BLAS kernel in use
(``architecture``), which the table header prints. The children check their outputs against
the scheduled kernel's outputs (harness tolerance) once per case.

Figures: GFLOP/s from the catalog's ``flops`` (GB/s from its ``bytes``, the minimal traffic,
for softmax and layernorm), each the median over ``--rounds`` rounds of the median of one
measurement (at least ``--min-time`` seconds and 3 repetitions after a warm-up); in every
round the contenders run back to back (with a short pause so that spinning worker threads of
the previous one go to sleep), so that the load of a shared machine falls on all of them
alike. Ratios are steps / numpy and steps / torch. A second table gives the same figures
from each contender's best repetition, which another process on the machine disturbs least.
The machine's peak is measured in the same run: an FMA microbenchmark (independent chains of
vector FMAs at each target's vector width, compiled by the harness's compiler with the
target's flags; the best of many ~2 ms runs, since a peak is a capability) and a copy
microbenchmark (64 MiB buffer, C, OpenMP; GB/s counting the bytes read and written, best of
several, and at t threads never less than at fewer threads); ``%pk`` is the figure as a
fraction of the FMA peak (GFLOP/s) or of the copy bandwidth (GB/s) at the same thread count.
The load average is printed at the start and the end: these machines are shared, and a
second thread is worth little while another process holds a core.

The JSON written to ``--out`` holds everything printed, plus min times, the machine, the
compiler and flags, and the threadpoolctl report.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import pickle
import platform
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
PAUSE_S = 0.3          # between contenders: OpenBLAS/OpenMP workers stop spinning

# name, library kernel, sizes (None: default), unit
CASES = [
    ("matmul512", "matmul", None, "GFLOP/s"),
    ("matmul1024", "matmul", {"N": 1024, "M": 1024, "K": 1024}, "GFLOP/s"),
    ("bmm", "bmm", None, "GFLOP/s"),
    ("softmax", "softmax", None, "GB/s"),
    ("layernorm", "layernorm", None, "GB/s"),
    ("conv2d", "conv2d", None, "GFLOP/s"),
    ("attention", "attention", None, "GFLOP/s"),
]


# =============================================================================== worker side
# A child process: numpy (and torch) imported with the cleaned environment. Messages are
# length-prefixed pickles on stdin/stdout.

def _send(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("worker pipe closed")
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


def _numpy_fn(np, name, x, sizes):
    """A zero-argument callable computing the case with numpy, and its output dict."""
    if name == "matmul":
        A, B = x["A"], x["B"]
        C = np.empty((A.shape[0], B.shape[1]), np.float32)
        return lambda: np.matmul(A, B, out=C), {"C": C}
    if name == "bmm":
        X, Y = x["X"], x["Y"]
        Z = np.empty((X.shape[0], X.shape[1], Y.shape[2]), np.float32)
        return lambda: np.matmul(X, Y, out=Z), {"Z": Z}
    if name == "softmax":
        X = x["X"]
        Y = np.empty_like(X)

        def f():
            np.subtract(X, X.max(axis=1, keepdims=True), out=Y)
            np.exp(Y, out=Y)
            np.divide(Y, Y.sum(axis=1, keepdims=True), out=Y)
        return f, {"Y": Y}
    if name == "layernorm":
        X, g, b, eps = x["X"], x["gamma"], x["beta"], np.float32(x["eps"])
        Y = np.empty_like(X)

        T = np.empty_like(X)

        def f():
            mu = X.mean(axis=1, keepdims=True)
            np.subtract(X, mu, out=Y)
            var = np.mean(np.multiply(Y, Y, out=T), axis=1, keepdims=True)
            np.multiply(Y, 1.0 / np.sqrt(var + eps), out=Y)
            np.multiply(Y, g, out=Y)
            np.add(Y, b, out=Y)
        return f, {"Y": Y}
    if name == "conv2d":
        X, Wt = x["X"], x["Wt"]
        n, c, hp, wp = X.shape
        f_, h, w = Wt.shape[0], hp - 2, wp - 2
        cols = np.empty((c, 3, 3, h, w), np.float32)
        Wm = Wt.reshape(f_, c * 9)
        Y = np.empty((n, f_, h, w), np.float32)

        def f():
            for b in range(n):
                for kh in range(3):
                    for kw in range(3):
                        cols[:, kh, kw] = X[b, :, kh:kh + h, kw:kw + w]
                np.matmul(Wm, cols.reshape(c * 9, h * w), out=Y[b].reshape(f_, h * w))
        return f, {"Y": Y}
    if name == "attention":
        Q, K, V, scale = x["Q"], x["K"], x["V"], np.float32(x["scale"])
        O = np.empty_like(Q)

        def f():
            P = Q @ K.T
            P *= scale
            P -= P.max(axis=1, keepdims=True)
            np.exp(P, out=P)
            s = P.sum(axis=1, keepdims=True)
            np.matmul(P, V, out=O)
            np.divide(O, s, out=O)
        return f, {"O": O}
    raise KeyError(name)


def _torch_fn(torch, name, x, sizes):
    t = {k: torch.from_numpy(v) if getattr(v, "ndim", 0) else v for k, v in x.items()}
    F = torch.nn.functional
    if name == "matmul":
        C = torch.empty(t["A"].shape[0], t["B"].shape[1])
        return lambda: torch.matmul(t["A"], t["B"], out=C), {"C": C}
    if name == "bmm":
        Z = torch.empty(t["X"].shape[0], t["X"].shape[1], t["Y"].shape[2])
        return lambda: torch.bmm(t["X"], t["Y"], out=Z), {"Z": Z}
    # These calls allocate their result. The previous result is released before the next
    # call, so that the allocator can hand the same block back: holding it (``y = f(x)`` in
    # a loop) makes glibc map and unmap a block this large at every call, and the call then
    # pays a page fault per 4 KiB (measured: layernorm 4 GB/s instead of 21 on one thread).
    out = {}
    if name == "softmax":
        def call():
            return "Y", torch.softmax(t["X"], dim=1)
    elif name == "layernorm":
        m = t["X"].shape[1]
        eps = float(x["eps"])

        def call():
            return "Y", F.layer_norm(t["X"], (m,), t["gamma"], t["beta"], eps)
    elif name == "conv2d":
        def call():   # the library kernel's input is already padded: padding 0 on it
            return "Y", F.conv2d(t["X"], t["Wt"])
    elif name == "attention":
        scale = float(x["scale"])
        q, k, v = (t[n].unsqueeze(0) for n in ("Q", "K", "V"))

        def call():
            return "O", F.scaled_dot_product_attention(q, k, v, scale=scale)[0]
    else:
        raise KeyError(name)

    def f():
        out.clear()
        key, value = call()
        out[key] = value
    return f, out


def _time_fn(fn, min_time: float, min_reps: int = 3, warmup: int = 1) -> dict:
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "reps": len(times)}


def worker_main(threads: int, use_torch: bool) -> None:
    import numpy as np
    from dojo_core import harness
    from dojo_core.kernels import load_kernel, random_inputs

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr           # stray prints must not corrupt the pipe
    limiter, tp_error = None, None
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError as exc:
        threadpool_info = threadpool_limits = None
        tp_error = f"threadpoolctl not installed ({exc}); thread counts set by environment only"
    torch, torch_error = None, None
    if use_torch:
        try:
            import torch
            torch.set_num_threads(threads)
        except ImportError as exc:
            torch, torch_error = None, f"not installed ({exc})"
    else:
        torch_error = "disabled (--no-torch)"
    np.zeros((8, 8), np.float32) @ np.zeros((8, 8), np.float32)   # load the BLAS
    if threadpool_limits is not None:
        limiter = threadpool_limits(limits=threads)
    info = threadpool_info() if threadpool_info is not None else []
    _send(out, {"threads": threads, "threadpoolctl": info, "threadpoolctl_error": tp_error,
                "numpy": np.__version__,
                "torch": torch.__version__ if torch is not None else None,
                "torch_error": torch_error,
                "torch_threads": torch.get_num_threads() if torch is not None else None,
                "env_unset": [k for k in UNSET if k in os.environ]})
    prepared = {}
    while True:
        try:
            msg = _recv(inp)
        except EOFError:
            break
        if msg["op"] == "quit":
            break
        try:
            key = (msg["case"], msg["lib"])
            if key not in prepared:
                program = load_kernel(msg["kernel"], msg["sizes"])
                x = random_inputs(program, 0)
                if msg["lib"] == "torch":
                    if torch is None:
                        raise RuntimeError(f"torch {torch_error}")
                    prepared[key] = (program,) + _torch_fn(torch, msg["kernel"], x, msg["sizes"])
                else:
                    prepared[key] = (program,) + _numpy_fn(np, msg["kernel"], x, msg["sizes"])
            program, fn, outputs = prepared[key]
            if msg["op"] == "check":
                fn()
                got = {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in outputs.items()}
                errors = harness.compare(got, msg["expected"], program)
                _send(out, {"ok": True, "errors": errors})
            elif msg["op"] == "time":
                if torch is not None:
                    with torch.inference_mode():
                        result = _time_fn(fn, msg["min_time"])
                else:
                    result = _time_fn(fn, msg["min_time"])
                _send(out, {"ok": True, **result})
        except Exception as exc:                                      # noqa: BLE001
            _send(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    del limiter


class Worker:
    """A numpy/torch child process at a fixed thread count."""

    def __init__(self, threads: int, use_torch: bool):
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(threads)
        extra = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + extra if extra else "")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(threads)]
        if not use_torch:
            cmd.append("--no-torch")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.hello = _recv(self.proc.stdout)

    def call(self, **msg):
        _send(self.proc.stdin, msg)
        return _recv(self.proc.stdout)

    def close(self):
        try:
            _send(self.proc.stdin, {"op": "quit"})
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:                                             # noqa: BLE001
            self.proc.kill()


# =============================================================================== peaks

_PEAK_C = r"""
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
typedef float vf __attribute__((vector_size(%(VB)d)));
#define LANES (%(VB)d / 4)
#define NACC 12

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec + 1e-9 * t.tv_nsec; }

/* GFLOP/s of NACC independent chains of vector FMAs per thread, iters each */
double dojo_fma_peak(int64_t iters, int threads)
{
  float sink = 0;
  omp_set_num_threads(threads);
  double t0 = now();
  #pragma omp parallel reduction(+:sink)
  {
    vf acc[NACC], a, b;
    for (int k = 0; k < NACC; ++k) acc[k] = (vf){0} + (float)(k + omp_get_thread_num());
    a = (vf){0} + 0.999999f; b = (vf){0} + 1e-7f;
    __asm__ volatile("" : "+x"(a), "+x"(b));
    for (int64_t i = 0; i < iters; ++i) {
      #pragma GCC unroll 16
      for (int k = 0; k < NACC; ++k) acc[k] = acc[k] * a + b;
    }
    for (int k = 0; k < NACC; ++k) for (int l = 0; l < LANES; ++l) sink += acc[k][l];
  }
  double s = now() - t0;
  __asm__ volatile("" : : "x"(sink));
  return 2.0 * LANES * NACC * (double)iters * threads / s / 1e9;
}

/* seconds of one copy of n floats from src to dst by threads threads */
double dojo_copy(float *restrict dst, const float *restrict src, int64_t n, int threads)
{
  omp_set_num_threads(threads);
  double t0 = now();
  #pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  return now() - t0;
}
"""


def load_peaks_lib(target):
    from dojo_core.compile import compile_shared
    source = _PEAK_C % {"VB": target.vector_bytes}
    compiled = compile_shared(source, target.cflags, target.ldflags)
    lib = ctypes.CDLL(compiled.path)
    lib.dojo_fma_peak.argtypes = [ctypes.c_int64, ctypes.c_int]
    lib.dojo_fma_peak.restype = ctypes.c_double
    lib.dojo_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    lib.dojo_copy.restype = ctypes.c_double
    return lib


def fma_iters(lib) -> int:
    """Iterations for about 2 ms of one thread (sized at one thread: with more, waking
    the other threads of a loaded machine can take longer than the work)."""
    iters = 1000
    while iters < 1 << 30:
        t0 = time.perf_counter()
        lib.dojo_fma_peak(iters, 1)
        if time.perf_counter() - t0 > 2e-3:
            break
        iters *= 2
    return iters


def fma_peak(lib, threads: int, iters: int, runs: int = 150) -> dict:
    lib.dojo_fma_peak(iters, threads)
    values = [lib.dojo_fma_peak(iters, threads) for _ in range(runs)]
    return {"best": max(values), "median": statistics.median(values), "runs": runs,
            "iters": iters}


def copy_bandwidth(lib, threads: int, runs: int = 30) -> dict:
    import numpy as np
    from dojo_core.harness import aligned_empty
    n = (64 << 20) // 4
    src, dst = aligned_empty((n,), np.float32), aligned_empty((n,), np.float32)
    src[...] = 1.0
    dst[...] = 0.0
    lib.dojo_copy(dst.ctypes.data, src.ctypes.data, n, threads)
    secs = [lib.dojo_copy(dst.ctypes.data, src.ctypes.data, n, threads) for _ in range(runs)]
    gbs = [2 * 4 * n / s / 1e9 for s in secs]
    return {"best": max(gbs), "median": statistics.median(gbs), "runs": runs,
            "buffer_bytes": 4 * n}


# =============================================================================== main side

def fmt(v, width=7, digits=1):
    if v is None:
        return "-".rjust(width)
    return f"{v:{width}.{digits}f}"


def fmt_ratio(v, width=6):
    return "-".rjust(width) if v is None else f"{v:{width}.2f}"


def fmt_pct(v, width=5):
    return "-".rjust(width) if v is None else f"{100 * v:{width}.0f}%"


def print_table(results, key: str) -> None:
    """One table of the results, figures from the times under ``key`` (median_s, min_s)."""
    head = (f"{'case':10s} {'isa':>7s} {'thr':>3s} {'unit':>7s} {'naive':>7s} {'steps':>7s} "
            f"{'numpy':>7s} "
            f"{'torch':>7s} {'st/np':>6s} {'st/pt':>6s} {'st%pk':>6s} {'np%pk':>6s} "
            f"{'pt%pk':>6s}  check")
    print(head)
    print("-" * len(head))
    for r in results:
        v = {w: (r["work"] / r[w][key] / 1e9 if r.get(w) else None)
             for w in ("naive", "steps", "numpy", "torch")}
        pk = r["peak"]
        ratio = (lambda a, b: a / b if a and b else None)
        ok = "ok" if r["verified"] else f"FAILED ({r['max_error']:.3g})"
        libs = " ".join(f"{k}:{e:.2g}" if isinstance(e, float) else f"{k}:{e}"
                        for k, e in r["library_errors"].items())
        isa = r["target"].replace("x86-", "")[:7]
        print(f"{r['case']:10s} {isa:>7s} {r['threads']:3d} {r['unit']:>7s} {fmt(v['naive'])} "
              f"{fmt(v['steps'])} {fmt(v['numpy'])} {fmt(v['torch'])} "
              f"{fmt_ratio(ratio(v['steps'], v['numpy']))} "
              f"{fmt_ratio(ratio(v['steps'], v['torch']))} "
              f"{fmt_pct(ratio(v['steps'], pk))} {fmt_pct(ratio(v['numpy'], pk))} "
              f"{fmt_pct(ratio(v['torch'], pk))}  {ok}; {libs}")



def cpu_model() -> str:
    from dojo_core.machine import cpu_info
    return cpu_info().model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", metavar="FILE", help="write the results as JSON to FILE")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of every contender (5)")
    ap.add_argument("--min-time", type=float, default=0.15,
                    help="seconds of repetitions per measurement (0.15)")
    ap.add_argument("--threads", default=None,
                    help="comma-separated thread counts (default: 1 and all cores)")
    ap.add_argument("--cases", default=None,
                    help="comma-separated subset of: " + ", ".join(c[0] for c in CASES))
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    ap.add_argument("--target", default=None,
                    help="comma-separated targets of the scheduled kernels and FMA peaks "
                         "(default: this machine's; x86-avx512,x86-avx2 on an AVX-512 machine "
                         "measures both ISAs' code in one run)")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker is not None:
        worker_main(args.worker, not args.no_torch)
        return 0

    from dojo_core import harness
    from dojo_core.codegen import get_target
    from dojo_core.kernels import info, load_kernel, random_inputs, steps_path
    from dojo_core.steps import read_steps, replay

    started = time.perf_counter()
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = ([int(t) for t in args.threads.split(",")] if args.threads
               else sorted({1, ncpu or 1}))
    cases = CASES
    if args.cases:
        wanted = args.cases.split(",")
        unknown = [c for c in wanted if c not in {x[0] for x in CASES}]
        if unknown:
            ap.error(f"unknown case(s): {', '.join(unknown)}")
        cases = [c for c in CASES if c[0] in wanted]
    targets = [get_target(n) for n in args.target.split(",")] if args.target \
        else [get_target(None)]
    target = targets[0]
    load_start = os.getloadavg()
    print(f"PerfDojo vs libraries -- {cpu_model()}, {ncpu} cores, target(s) "
          f"{', '.join(t.name for t in targets)} (last-level cache {target.cache_bytes >> 20} MiB)")
    print(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}")
    print(f"removed from the numpy/torch children's environment: {', '.join(UNSET)} "
          f"(set here: {', '.join(k for k in UNSET if k in os.environ) or 'none'})")

    # ---------------------------------------------------------------- peaks
    fmas = {}                # target name -> thread count -> FMA peak at its vector width
    for tg in targets:
        peaks_lib = load_peaks_lib(tg)
        iters = fma_iters(peaks_lib)
        fmas[tg.name] = {t: fma_peak(peaks_lib, t, iters) for t in threads}
    copy = {t: copy_bandwidth(peaks_lib, t) for t in threads}
    for t in threads:       # t threads can always do what fewer did (a loaded core)
        copy[t]["peak"] = max(copy[u]["best"] for u in threads if u <= t)
    for t in threads:
        fma_text = "; ".join(f"FMA {tg} {f[t]['best']:.1f} GFLOP/s (median of runs "
                             f"{f[t]['median']:.1f})" for tg, f in fmas.items())
        print(f"peak, {t} thread(s): {fma_text}; copy 64 MiB {copy[t]['best']:.1f} GB/s "
              f"(median {copy[t]['median']:.1f}; peak used: {copy[t]['peak']:.1f})")

    # ---------------------------------------------------------------- workers
    workers = {t: Worker(t, not args.no_torch) for t in threads}
    hello = workers[threads[0]].hello
    print(f"numpy {hello['numpy']}, torch {hello['torch'] or hello['torch_error']}")
    if hello["threadpoolctl_error"]:
        print(f"threadpoolctl: {hello['threadpoolctl_error']}")
    for t in threads:
        for pool in workers[t].hello["threadpoolctl"]:
            print(f"  threadpoolctl ({t} thr): {pool.get('internal_api')} "
                  f"{pool.get('version')} kernel={pool.get('architecture', '-')} "
                  f"threads={pool.get('num_threads')} {Path(pool.get('filepath', '')).name}")
    have_torch = hello["torch"] is not None

    results = []
    try:
        for target, (case, kname, sizes, unit) in ((tg, c) for tg in targets for c in cases):
            fma = fmas[target.name]
            entry = info(kname)
            ref = load_kernel(kname, sizes)
            spath = steps_path(kname, target)     # NAME.TARGET.steps where one exists
            prog = replay(ref, read_steps(spath), str(spath))
            inputs = random_inputs(ref, 0)
            lib_ref = harness.build(ref, target)
            lib_steps = harness.build(prog, target)
            outputs = harness.run_c(prog, inputs, target=target, library=lib_steps)
            check = harness.verify(prog, ref, inputs, target=target, reference="c",
                                   outputs=outputs)
            s = prog.size_values
            work = entry.bytes(s) if unit == "GB/s" else entry.flops(s)
            lib_checks = {}
            for lib in ["numpy"] + (["torch"] if have_torch else []):
                r = workers[threads[0]].call(op="check", case=case, lib=lib, kernel=kname,
                                             sizes=sizes, expected=outputs)
                lib_checks[lib] = (max(r["errors"].values()) if r["ok"] else r["error"])
            naive = harness.measure(ref, inputs, min_time=args.min_time, min_reps=3,
                                    threads=1, library=lib_ref, timeout=600)
            row_common = {
                "case": case, "target": target.name, "kernel": kname, "sizes": s, "unit": unit,
                "work": work, "steps": str(spath.relative_to(ROOT)),
                "verified": check["verified"], "verified_against": check["reference"],
                "max_error": max(check["errors"].values(), default=0.0),
                "library_errors": lib_checks,
                "naive": {"median_s": naive["median_s"], "min_s": naive["min_s"],
                          "value": work / naive["median_s"] / 1e9},
            }
            for t in threads:
                per = {"steps": [], "numpy": [], "torch": []}
                errors = {}
                for _ in range(args.rounds):
                    m = harness.measure(prog, inputs, min_time=args.min_time, threads=t,
                                        library=lib_steps, timeout=600)
                    per["steps"].append((m["median_s"], m["min_s"]))
                    time.sleep(PAUSE_S)
                    for lib in ["numpy"] + (["torch"] if have_torch else []):
                        r = workers[t].call(op="time", case=case, lib=lib, kernel=kname,
                                            sizes=sizes, min_time=args.min_time)
                        if r["ok"]:
                            per[lib].append((r["median_s"], r["min_s"]))
                        else:
                            errors[lib] = r["error"]
                        time.sleep(PAUSE_S)
                row = dict(row_common, threads=t, errors=errors)
                for who, vals in per.items():
                    if vals:
                        med = statistics.median(v[0] for v in vals)
                        row[who] = {"median_s": med, "min_s": min(v[1] for v in vals),
                                    "rounds": [v[0] for v in vals],
                                    "value": work / med / 1e9}
                    else:
                        row[who] = None
                peak = fma[t]["best"] if unit == "GFLOP/s" else copy[t]["peak"]
                val = {w: (row[w]["value"] if row.get(w) else None)
                       for w in ("naive", "steps", "numpy", "torch")}
                row["steps_vs_numpy"] = val["steps"] / val["numpy"] if val["numpy"] else None
                row["steps_vs_torch"] = val["steps"] / val["torch"] if val["torch"] else None
                row["peak"] = peak
                best = {w: (work / row[w]["min_s"] / 1e9 if row.get(w) else None)
                        for w in ("naive", "steps", "numpy", "torch")}
                row["best"] = {
                    "value": best,
                    "steps_vs_numpy": best["steps"] / best["numpy"] if best["numpy"] else None,
                    "steps_vs_torch": best["steps"] / best["torch"] if best["torch"] else None,
                    "fraction_of_peak": {w: (v / peak if v else None) for w, v in best.items()}}
                row["fraction_of_peak"] = {w: (v / peak if v else None) for w, v in val.items()}
                results.append(row)
                print(f"  measured {case} ({target.name}) at {t} thread(s)", file=sys.stderr)
    finally:
        for w in workers.values():
            w.close()

    # ---------------------------------------------------------------- table
    load_end = os.getloadavg()
    for title, key in (("median of rounds (each the median of its repetitions)", "median_s"),
                       ("best repetition (least disturbed by other load)", "min_s")):
        print()
        print(f"== {title}")
        print_table(results, key)
    print()
    print("naive: untransformed kernel (sequential, timed at 1 thread); steps: NAME.steps; "
          "st/np, st/pt: steps / numpy, steps / torch;")
    print("%pk: of the measured FMA peak (GFLOP/s rows) or 64 MiB copy bandwidth (GB/s rows) "
          "at that thread count (best runs); check: steps vs untransformed")
    print("(ok = within tolerance), library outputs vs steps outputs as worst error / "
          "tolerance (<= 1 agrees).")
    print(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}; "
          f"at end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}; "
          f"total {time.perf_counter() - started:.0f} s")

    if args.out:
        doc = {
            "machine": {"cpu": cpu_model(), "cores": ncpu, "platform": platform.platform(),
                        "target": target.name, "cache_bytes": target.cache_bytes,
                        "targets": {tg.name: {"cflags": list(tg.cflags),
                                              "ldflags": list(tg.ldflags)} for tg in targets},
                        "cflags": list(target.cflags),
                        "ldflags": list(target.ldflags)},
            "compiler": lib_steps.compiled.compiler if results else None,
            "load_average": {"start": list(load_start), "end": list(load_end)},
            "env_unset_for_libraries": list(UNSET),
            "env_set_here": {k: os.environ[k] for k in UNSET if k in os.environ},
            "peaks": {"fma_gflops": {str(t): fmas[targets[0].name][t] for t in threads},
                      "fma_gflops_by_target": {n: {str(t): f[t] for t in threads}
                                               for n, f in fmas.items()},
                      "copy_gbs": {str(t): copy[t] for t in threads}},
            "libraries": {str(t): workers[t].hello for t in threads},
            "rounds": args.rounds, "min_time": args.min_time,
            "results": results,
            "seconds": time.perf_counter() - started,
        }
        Path(args.out).write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {args.out}")
    return 0 if all(r["verified"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

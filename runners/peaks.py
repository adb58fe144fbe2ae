"""The machine's measured peaks: f32 FMA throughput and memory bandwidth, all threads.

``python -m runners.peaks`` prints one JSON object::

    {"gflops": F, "gbytes_per_s": B, "threads": T, "vector_bytes": V, "target": NAME,
     "array_bytes": A, "method": "..."}

Both are measured on this machine, never taken from a table for one ISA:

* FMA: every OpenMP thread runs ``FMA_CHAINS`` independent chains of ``a = a * b + c`` on
  vectors of the host target's SIMD width (``codegen.targets.detect_host_target``), compiled
  with the target's own flags (``-march=native``, ``-ffp-contract=fast``: one fused
  multiply-add per lane and step); 2 flops per lane and step; the best of ``TRIES`` runs.
* Bandwidth: the STREAM triad ``a[i] = b[i] + s * c[i]`` over three f32 arrays of
  ``max(4 x last-level cache, MIN_ARRAY_BYTES)`` bytes each (at most ``MAX_ARRAY_BYTES``) (first touched by the threads
  that use them), counted as STREAM counts it (12 bytes per element, write-allocate
  traffic not counted); the best of ``TRIES`` runs.

Each thread's rate is its work over its own CPU time (``CLOCK_THREAD_CPUTIME_ID``), and the
rates are summed: time slices a busy machine gives to other processes do not lower the peak
(two hyperthreads of one core share its units, so their sum is still that core's rate).  A
kernel's time is wall-clock, so on a busy machine its share of the peak can only look lower.

``measure_in_child(timeout)`` runs that in a child process (so that the runner daemon never
loads OpenMP itself) and returns the dict, or None with the failure logged: a runner without
a compiler still registers, with no peaks.  ``cached(state_dir, hw)`` keeps a measurement per
machine key (CPU model, threads, compilers) so a restarted runner does not measure again
(``python -m runners --peaks measure`` measures anew: peaks taken while the machine was busy
are too low).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import subprocess
import sys
import time

from dojo_core.codegen import detect_host_target
from dojo_core.compile import compile_shared

log = logging.getLogger("runners.peaks")

FMA_CHAINS = 12           # independent accumulators: latency (4-5 cycles) x 2 FMA ports, within 16 registers
TRIES = 5                 # best of: a peak is an upper bound, and load only ever lowers a try
FMA_SECONDS = 0.05        # target duration of one FMA run
MIN_ARRAY_BYTES = 32 << 20
MAX_ARRAY_BYTES = 128 << 20

SOURCE = r"""
#define _POSIX_C_SOURCE 199309L
#include <omp.h>
#include <stdlib.h>
#include <time.h>
typedef float vf __attribute__((vector_size(VB)));
#define LANES (VB / 4)

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int dojo_threads(void) { return omp_get_max_threads(); }

/* flops per CPU-second of each thread, summed over the threads; *sink keeps the chains */
double dojo_fma(long iters, float *sink) {
  double rate = 0.0;
  float total = 0.0f;
#pragma omp parallel reduction(+:rate, total)
  {
    float s = 1.0f + 1e-3f * (float)omp_get_thread_num();
    vf b = (vf){0} + 0.99999f, c = (vf){0} + 1e-5f;
    vf a0 = (vf){0} + s, a1 = a0 + 0.01f, a2 = a0 + 0.02f, a3 = a0 + 0.03f, a4 = a0 + 0.04f,
       a5 = a0 + 0.05f, a6 = a0 + 0.06f, a7 = a0 + 0.07f, a8 = a0 + 0.08f, a9 = a0 + 0.09f,
       a10 = a0 + 0.10f, a11 = a0 + 0.11f;
    double t0 = cpu_now();
    for (long i = 0; i < iters; i++) {
      a0 = a0 * b + c; a1 = a1 * b + c; a2 = a2 * b + c; a3 = a3 * b + c;
      a4 = a4 * b + c; a5 = a5 * b + c; a6 = a6 * b + c; a7 = a7 * b + c;
      a8 = a8 * b + c; a9 = a9 * b + c; a10 = a10 * b + c; a11 = a11 * b + c;
    }
    double t = cpu_now() - t0;
    vf v = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    for (int k = 0; k < LANES; k++) total += v[k];
    if (t > 0) rate += 2.0 * LANES * 12.0 * (double)iters / t;
  }
  *sink = total;
  return rate;
}

/* STREAM triad: bytes per CPU-second of each thread, summed; the best of tries runs */
double dojo_triad(long n, int tries) {
  float *a = aligned_alloc(64, (size_t)n * 4), *b = aligned_alloc(64, (size_t)n * 4),
        *c = aligned_alloc(64, (size_t)n * 4);
  if (!a || !b || !c) { free(a); free(b); free(c); return -1.0; }
#pragma omp parallel
  {  /* each thread first touches the block it runs on */
    long t = omp_get_thread_num(), nt = omp_get_num_threads(), lo = n * t / nt, hi = n * (t + 1) / nt;
    for (long i = lo; i < hi; i++) { a[i] = 0.0f; b[i] = 1.0f; c[i] = 2.0f; }
  }
  double best = 0.0;
  for (int r = 0; r < tries + 1; r++) {
    double rate = 0.0;
#pragma omp parallel reduction(+:rate)
    {
      long t = omp_get_thread_num(), nt = omp_get_num_threads(), lo = n * t / nt, hi = n * (t + 1) / nt;
      double t0 = cpu_now();
#pragma omp simd
      for (long i = lo; i < hi; i++) a[i] = b[i] + 0.5f * c[i];
      double dt = cpu_now() - t0;
      if (dt > 0) rate += 12.0 * (double)(hi - lo) / dt;
    }
    if (r > 0 && rate > best) best = rate;     /* the first run is a warm-up */
  }
  volatile float keep = a[n / 2];
  (void)keep;
  free(a); free(b); free(c);
  return best;
}
"""


def measure() -> dict:
    """The peaks of this machine (see the module docstring), in this process."""
    target = detect_host_target()
    vb = max(16, int(target.vector_bytes))
    compiled = compile_shared(SOURCE, tuple(target.cflags) + (f"-DVB={vb}",), tuple(target.ldflags))
    dll = ctypes.CDLL(compiled.path)
    dll.dojo_threads.restype = ctypes.c_int
    dll.dojo_fma.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_float)]
    dll.dojo_fma.restype = ctypes.c_double
    dll.dojo_triad.argtypes, dll.dojo_triad.restype = [ctypes.c_long, ctypes.c_int], ctypes.c_double
    threads = dll.dojo_threads()
    sink = ctypes.c_float()

    dll.dojo_fma(1000, ctypes.byref(sink))       # warm-up: starts the OpenMP threads
    iters = 1 << 14
    while _timed(lambda: dll.dojo_fma(iters, ctypes.byref(sink))) < FMA_SECONDS and iters < 1 << 36:
        iters *= 2                               # one run lasts at least FMA_SECONDS
    flops = max(dll.dojo_fma(iters, ctypes.byref(sink)) for _ in range(TRIES))

    array_bytes = min(MAX_ARRAY_BYTES, max(MIN_ARRAY_BYTES, 4 * int(target.cache_bytes or 0)))
    bandwidth = dll.dojo_triad(array_bytes // 4, TRIES)
    if bandwidth <= 0:
        raise MemoryError(f"cannot allocate three arrays of {array_bytes} bytes")
    return {"gflops": flops / 1e9, "gbytes_per_s": bandwidth / 1e9,
            "threads": threads, "vector_bytes": vb, "target": target.name, "array_bytes": array_bytes,
            "method": f"f32 FMA: {FMA_CHAINS} chains x {vb // 4} lanes per thread; "
                      f"bandwidth: STREAM triad, 3 x {array_bytes >> 20} MiB; "
                      "rates per CPU-second of each thread, summed"}


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure_in_child(timeout: float = 120.0) -> dict | None:
    """``measure()`` in a fresh Python process; None (logged) when it fails."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.run([sys.executable, "-m", "runners.peaks"], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        log.warning("peak measurement timed out after %g s; registering without peaks", timeout)
        return None
    if proc.returncode != 0:
        log.warning("peak measurement failed: %s", (proc.stderr.strip().splitlines() or ["?"])[-1])
        return None
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        log.warning("peak measurement printed no JSON")
        return None


def machine_key(hw: dict) -> str:
    """What the peaks depend on: CPU model, logical CPUs, compilers (a hash)."""
    cpu = (hw or {}).get("cpu") or {}
    text = json.dumps([cpu.get("model"), cpu.get("logical_cpus"), (hw or {}).get("compilers"),
                       os.environ.get("OMP_NUM_THREADS")], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached(state_dir: str, hw: dict, timeout: float = 120.0, fresh: bool = False) -> dict | None:
    """The peaks stored in ``state_dir`` for this machine, else (or with ``fresh``) measured
    now and stored."""
    path = os.path.join(state_dir, f"peaks-{machine_key(hw)}.json")
    try:
        with open(path) as f:
            data = json.load(f)
        if not fresh and isinstance(data, dict) and data.get("gflops") and data.get("gbytes_per_s"):
            return data
    except (OSError, ValueError):
        pass
    data = measure_in_child(timeout)
    if data is not None:
        data["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    return data


if __name__ == "__main__":
    print(json.dumps(measure()))

"""The machine's peaks as bench/libraries.py measures them: vector FMA throughput and copy
bandwidth, from a small C library compiled for one target.

Owns ``PEAK_C`` (the C source: ``dojo_fma_peak``, independent chains of vector FMAs per
OpenMP thread at the target's vector width; ``dojo_copy``, one OpenMP copy of a float
buffer), ``load_peaks_lib(target)`` (that source compiled with the target's flags by the harness's
compiler, through the compile cache), ``fma_iters``, ``fma_peak`` and ``copy_bandwidth``.

Guarantees: a peak is a capability, so each figure is the best of many runs (the median is
reported beside it); nothing is cached between calls except the compiled library. This
is not ``runners/peaks.py``, which measures a runner's peaks on thread CPU time with a
STREAM triad.
"""
from __future__ import annotations

import ctypes
import statistics
import time

import numpy as np

from dojo_core.compile import compile_shared
from dojo_core.harness import aligned_empty

PEAK_C = r"""
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
    """PEAK_C compiled with the target's flags (vector width ``target.vector_bytes``)."""
    source = PEAK_C % {"VB": target.vector_bytes}
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
    """GFLOP/s of ``iters`` FMA iterations at ``threads`` threads, best of ``runs``."""
    lib.dojo_fma_peak(iters, threads)
    values = [lib.dojo_fma_peak(iters, threads) for _ in range(runs)]
    return {"best": max(values), "median": statistics.median(values), "runs": runs,
            "iters": iters}


def copy_bandwidth(lib, threads: int, runs: int = 30, buffer_bytes: int = 64 << 20) -> dict:
    """GB/s of copying a float buffer of ``buffer_bytes`` (64 MiB unless given) into another
    (bytes read and written), best of ``runs``."""
    n = buffer_bytes // 4
    src, dst = aligned_empty((n,), np.float32), aligned_empty((n,), np.float32)
    src[...] = 1.0
    dst[...] = 0.0
    lib.dojo_copy(dst.ctypes.data, src.ctypes.data, n, threads)
    secs = [lib.dojo_copy(dst.ctypes.data, src.ctypes.data, n, threads) for _ in range(runs)]
    gbs = [2 * 4 * n / s / 1e9 for s in secs]
    return {"best": max(gbs), "median": statistics.median(gbs), "runs": runs,
            "buffer_bytes": 4 * n}

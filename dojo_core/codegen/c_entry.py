"""The C the harness appends to a generated kernel: ``dojo_set_threads`` and ``dojo_time``
(``timing_entry``), and the C parameter types of ``dojo_kernel`` that its calls cast to
(``c_signature_types``, also used by the cross-target wrappers).  The kernel's own text is
``c.generate_c``'s; this entry calls the kernel and does not change it."""
from __future__ import annotations

from .. import ir
from .c_expr import CTYPES


def c_signature_types(program: ir.Program) -> list:
    """The C parameter types of dojo_kernel, in order (for wrappers and harnesses)."""
    out = []
    for decl in program.arrays:
        const = "const " if decl.kind == "in" else ""
        out.append(f"{const}{CTYPES[decl.dtype]} *")
    return out


def timing_entry(program: ir.Program) -> str:
    """C text of ``dojo_time``, appended to a kernel's translation unit by the harness:

        int dojo_time(void **args, int64_t reps, int threads, int64_t flush_bytes,
                      double *times)

    sets the OpenMP thread count (threads > 0), then calls dojo_kernel reps times, timing
    each call with clock_gettime(CLOCK_MONOTONIC) into times[r] (seconds); with
    flush_bytes > 0 a buffer of that size is written before every call (not timed) to
    evict the caches. Returns 0, or -1 if the flush buffer cannot be allocated."""
    casts = ", ".join(f"({t})args[{k}]" for k, t in enumerate(c_signature_types(program)))
    return f"""
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static void *(*volatile dojo_memset)(void *, int, size_t) = memset;

int dojo_set_threads(int threads)
{{
#ifdef _OPENMP
  if (threads > 0) omp_set_num_threads(threads);
  return omp_get_max_threads();
#else
  (void)threads;
  return 1;
#endif
}}

int dojo_time(void **args, int64_t reps, int threads, int64_t flush_bytes, double *times)
{{
  char *flush = NULL;
  struct timespec t0, t1;
  (void)args;
  dojo_set_threads(threads);
  if (flush_bytes > 0 && !(flush = malloc((size_t)flush_bytes))) return -1;
  for (int64_t r = 0; r < reps; ++r) {{
    if (flush) dojo_memset(flush, (int)(r & 0x7f) + 1, (size_t)flush_bytes);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    dojo_kernel({casts});
    clock_gettime(CLOCK_MONOTONIC, &t1);
    times[r] = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  }}
  free(flush);
  return 0;
}}
"""


__all__ = ["timing_entry", "c_signature_types"]

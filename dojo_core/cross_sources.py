"""The C text a cross build adds to a kernel: the driver ``main`` and the libomp shim.

Owns ``driver_source(program, nbytes)``: a ``main`` appended to the kernel's translation
unit that reads every array (declaration order, raw bytes) from the file ``argv[1]``, calls
``dojo_kernel`` once and writes the ``out`` and ``inout`` arrays to ``argv[2]``; and
``KMPC_SHIM``: the libomp ``__kmpc_*`` entry points clang emits for ``omp parallel`` /
``parallel for`` (fork with up to ``KMPC_MAX_ARGS`` shared variables, static schedules 33
and 34, barrier, thread number, critical, single, master, reductions) over libgomp, for
targets without a libomp of their own.

Guarantees: pure text, a function of the program and the sizes only (no compiler, no file,
no host probe); a call the shim lacks is a link error, never a serial run. Compiling and
running this text is ``cross.py``'s job.
"""
from __future__ import annotations

from .codegen.c_entry import c_signature_types


def driver_source(program, nbytes) -> str:
    """C text of ``main`` for a kernel's translation unit (see the module docstring);
    ``nbytes``: the byte size of every declared array, in declaration order."""
    types = c_signature_types(program)
    outs = [int(d.kind in ("out", "inout")) for d in program.arrays]
    n = len(types)
    sizes = ", ".join(f"{int(b)}u" for b in nbytes) or "0u"
    flags = ", ".join(str(o) for o in outs) or "0"
    call = ", ".join(f"({t})dojo_a[{k}]" for k, t in enumerate(types))
    return f"""
/* PerfDojo cross driver: {program.name}, arrays in declaration order */
#include <stdio.h>
#include <stdlib.h>

static const size_t dojo_nbytes[{max(1, n)}] = {{{sizes}}};
static const int dojo_is_output[{max(1, n)}] = {{{flags}}};

int main(int argc, char **argv)
{{
  void *dojo_a[{max(1, n)}] = {{0}};
  FILE *f;
  if (argc != 3) {{ fputs("usage: KERNEL IN OUT\\n", stderr); return 2; }}
  if (!(f = fopen(argv[1], "rb"))) {{ perror(argv[1]); return 3; }}
  for (int k = 0; k < {n}; ++k) {{
    dojo_a[k] = aligned_alloc(64, (dojo_nbytes[k] + 64) & ~(size_t)63);
    if (!dojo_a[k] || fread(dojo_a[k], 1, dojo_nbytes[k], f) != dojo_nbytes[k]) {{
      fprintf(stderr, "cannot read array %d\\n", k);
      return 3;
    }}
  }}
  fclose(f);
  dojo_kernel({call});
  if (!(f = fopen(argv[2], "wb"))) {{ perror(argv[2]); return 4; }}
  for (int k = 0; k < {n}; ++k)
    if (dojo_is_output[k] && fwrite(dojo_a[k], 1, dojo_nbytes[k], f) != dojo_nbytes[k]) return 4;
  if (fclose(f) != 0) return 4;
  for (int k = 0; k < {n}; ++k) free(dojo_a[k]);
  return 0;
}}
"""


def _kmpc_cases(limit: int) -> str:
    cases = []
    for n in range(limit + 1):
        args = "".join(f", a[{k}]" for k in range(n))
        cases.append(f"  case {n}: f->fn(&gtid, &btid{args}); break;")
    return "\n".join(cases)


KMPC_MAX_ARGS = 48
KMPC_SHIM = r"""/* PerfDojo: the libomp entry points clang emits, over libgomp (see dojo_core/cross.py) */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
extern void GOMP_barrier(void);
extern void GOMP_critical_start(void);
extern void GOMP_critical_end(void);
extern _Bool GOMP_single_start(void);
extern int omp_get_thread_num(void);
extern int omp_get_num_threads(void);

typedef struct ident ident_t;
typedef void (*kmpc_micro)(int32_t *, int32_t *, ...);

struct dojo_fork { kmpc_micro fn; int32_t argc; void *args[MAXARGS]; };
static __thread int32_t dojo_pushed;

static void dojo_fail(const char *what)
{
  fprintf(stderr, "PerfDojo kmpc shim: %s\n", what);
  abort();
}

static void dojo_fork_body(void *p)
{
  struct dojo_fork *f = p;
  int32_t gtid = omp_get_thread_num(), btid = gtid;
  void **a = f->args;
  switch (f->argc) {
CASES
  default: dojo_fail("too many shared variables");
  }
}

void __kmpc_fork_call(ident_t *loc, int32_t argc, kmpc_micro fn, ...)
{
  struct dojo_fork f;
  va_list ap;
  unsigned n = (unsigned)dojo_pushed;
  (void)loc;
  if (argc < 0 || argc > MAXARGS) dojo_fail("too many shared variables");
  f.fn = fn;
  f.argc = argc;
  va_start(ap, fn);
  for (int32_t k = 0; k < argc; ++k) f.args[k] = va_arg(ap, void *);
  va_end(ap);
  dojo_pushed = 0;
  GOMP_parallel(dojo_fork_body, &f, n, 0);
}

void __kmpc_push_num_threads(ident_t *loc, int32_t gtid, int32_t n)
{
  (void)loc; (void)gtid;
  dojo_pushed = n > 0 ? n : 0;
}

int32_t __kmpc_global_thread_num(ident_t *loc) { (void)loc; return omp_get_thread_num(); }
void __kmpc_barrier(ident_t *loc, int32_t gtid) { (void)loc; (void)gtid; GOMP_barrier(); }
void __kmpc_for_static_fini(ident_t *loc, int32_t gtid) { (void)loc; (void)gtid; }
int32_t __kmpc_master(ident_t *loc, int32_t gtid) { (void)loc; (void)gtid; return omp_get_thread_num() == 0; }
void __kmpc_end_master(ident_t *loc, int32_t gtid) { (void)loc; (void)gtid; }
int32_t __kmpc_single(ident_t *loc, int32_t gtid) { (void)loc; (void)gtid; return GOMP_single_start(); }
void __kmpc_end_single(ident_t *loc, int32_t gtid) { (void)loc; (void)gtid; }

/* critical sections and reductions: one global lock (each thread combines its part under
   it: the answer 1 of __kmpc_reduce*) */
void __kmpc_critical(ident_t *loc, int32_t gtid, void *lck)
{ (void)loc; (void)gtid; (void)lck; GOMP_critical_start(); }
void __kmpc_end_critical(ident_t *loc, int32_t gtid, void *lck)
{ (void)loc; (void)gtid; (void)lck; GOMP_critical_end(); }
int32_t __kmpc_reduce_nowait(ident_t *loc, int32_t gtid, int32_t n, size_t size, void *data,
                             void (*fn)(void *, void *), void *lck)
{ (void)loc; (void)gtid; (void)n; (void)size; (void)data; (void)fn; (void)lck;
  GOMP_critical_start(); return 1; }
void __kmpc_end_reduce_nowait(ident_t *loc, int32_t gtid, void *lck)
{ (void)loc; (void)gtid; (void)lck; GOMP_critical_end(); }
int32_t __kmpc_reduce(ident_t *loc, int32_t gtid, int32_t n, size_t size, void *data,
                      void (*fn)(void *, void *), void *lck)
{ return __kmpc_reduce_nowait(loc, gtid, n, size, data, fn, lck); }
void __kmpc_end_reduce(ident_t *loc, int32_t gtid, void *lck)
{ (void)loc; (void)gtid; (void)lck; GOMP_critical_end(); GOMP_barrier(); }

/* libomp's static schedules: 34 (balanced blocks, the default) and 33 (chunked) */
#define DOJO_STATIC_INIT(NAME, T, UT, ST)                                                   \
void NAME(ident_t *loc, int32_t gtid, int32_t sched, int32_t *plast, T *plower, T *pupper,  \
          ST *pstride, ST incr, ST chunk)                                                   \
{                                                                                           \
  UT trip, tid = (UT)omp_get_thread_num(), nth = (UT)omp_get_num_threads();                \
  (void)loc; (void)gtid;                                                                    \
  if (incr == 0) dojo_fail("zero loop increment");                                          \
  if (incr > 0 ? *pupper < *plower : *pupper > *plower) {                                   \
    if (plast) *plast = 0;                                                                  \
    *pstride = incr;                                                                        \
    return;                                                                                 \
  }                                                                                         \
  if (incr == 1) trip = (UT)(*pupper - *plower) + 1;                                        \
  else if (incr == -1) trip = (UT)(*plower - *pupper) + 1;                                  \
  else if (incr > 0) trip = (UT)(*pupper - *plower) / (UT)incr + 1;                         \
  else trip = (UT)(*plower - *pupper) / (UT)(-incr) + 1;                                    \
  if (sched == 34) {                                                                        \
    if (trip < nth) {                                                                       \
      if (tid < trip) *pupper = *plower = *plower + (T)(tid * (UT)incr);                    \
      else *plower = *pupper + (T)incr;                                                     \
      if (plast) *plast = tid == trip - 1;                                                  \
    } else {                                                                                \
      UT small = trip / nth, extras = trip % nth;                                           \
      *plower += (T)((tid * small + (tid < extras ? tid : extras)) * (UT)incr);             \
      *pupper = *plower + (T)(small * (UT)incr) - (tid < extras ? 0 : (T)incr);             \
      if (plast) *plast = tid == nth - 1;                                                   \
    }                                                                                       \
    *pstride = (ST)(trip * (UT)incr);                                                       \
  } else if (sched == 33) {                                                                 \
    ST span = (chunk < 1 ? 1 : chunk) * incr;                                               \
    *pstride = span * (ST)nth;                                                              \
    *plower += (T)(span * (ST)tid);                                                         \
    *pupper = *plower + (T)(span - incr);                                                   \
    if (plast) *plast = tid == ((trip - 1) / (UT)(chunk < 1 ? 1 : chunk)) % nth;            \
  } else {                                                                                  \
    dojo_fail("unsupported OpenMP schedule");                                               \
  }                                                                                         \
}

DOJO_STATIC_INIT(__kmpc_for_static_init_4, int32_t, uint32_t, int32_t)
DOJO_STATIC_INIT(__kmpc_for_static_init_4u, uint32_t, uint32_t, int32_t)
DOJO_STATIC_INIT(__kmpc_for_static_init_8, int64_t, uint64_t, int64_t)
DOJO_STATIC_INIT(__kmpc_for_static_init_8u, uint64_t, uint64_t, int64_t)
""".replace("MAXARGS", str(KMPC_MAX_ARGS)).replace("CASES", _kmpc_cases(KMPC_MAX_ARGS))

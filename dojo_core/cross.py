"""Building and running generated C for another ISA: a cross compiler and qemu-user.

A target whose ``arch`` is not this machine's (``targets.is_foreign``) is built through its
``Target.cross`` route (``targets.CrossRoute``: compiler, flags, emulator) into an
*executable*, not a shared library: ``driver_source`` appends a ``main`` to the kernel's
translation unit that reads every array (declaration order, raw bytes) from the file named
by ``argv[1]``, calls ``dojo_kernel`` once and writes the ``out`` and ``inout`` arrays to
``argv[2]``. ``harness.run_c`` writes the arrays it prepared, runs the executable under the
emulator (``OMP_NUM_THREADS`` sets the threads) and reads the outputs back, so a cross run
has the native run's contract. Nothing is timed: an emulator's time is not a measurement
(``harness.measure`` and ``bench`` refuse foreign targets).

    check_route(target) -> Toolchain            the resolved tools, or TargetUnavailable
    compile_executable(source, target) -> CrossCompiled    cached like compile_shared
    assembly(source, target) -> str             the kernel's assembly (``-S``)
    run_executable(compiled, data, threads, timeout) -> bytes
    vector_instructions(asm, target) -> dict    counts of the target's vector instructions

``TargetUnavailable`` (a ``CompileError``) refuses a target that cannot be built and run
here: no cross route (an x86 target on an Arm host), or a compiler, emulator, sysroot or
linker of the route missing; the message names the Debian packages to install. Never a
silent build with the host compiler.

OpenMP: gcc routes link the cross libgomp (``-fopenmp``). clang (riscv-rvv: gcc 12 emits no
RVV) calls libomp's ``__kmpc_*`` entry points, and Debian has no riscv64 libomp, so
``KMPC_SHIM`` implements the ones clang emits for ``omp parallel`` / ``parallel for``
(fork, static schedules, barrier, thread number, critical, single, master, reductions) over
the cross libgomp; it is compiled
once per toolchain into the cache and linked with ``-lgomp``. A call the shim lacks is a
link error (a refusal), never a serial run.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .compile import (CompileError, Compiled, _errors, _run, cache_dir, cache_key,
                      compiler_version, run_in_group)
from .codegen.targets import Target, get_target, host_arch, is_foreign


class TargetUnavailable(CompileError):
    """The target cannot be built and run on this machine; str() says why."""


class EmulationError(Exception):
    """The executable failed under the emulator (crash, timeout); str() says why."""


@dataclass(frozen=True)
class CrossCompiled(Compiled):
    """An executable for a foreign target and the command that runs it here."""
    emulator: tuple = ()
    target: str = ""


@dataclass(frozen=True)
class Toolchain:
    cc: tuple              # compiler argv prefix, the compiler resolved to its path
    emulator: tuple        # emulator argv prefix, resolved
    version: str


def check_route(target) -> Toolchain:
    """The resolved cross toolchain of a foreign target, or TargetUnavailable (why)."""
    target = get_target(target)
    route = target.cross
    here = host_arch()
    if route is None:
        raise TargetUnavailable(
            f"target {target.name} ({target.arch}) cannot run on this {here} machine: "
            f"it has no cross route (compiler and emulator) from here")
    hint = f" (apt-get install {route.packages})" if route.packages else ""
    cc = shutil.which(route.cc[0])
    if not cc:
        raise TargetUnavailable(f"target {target.name}: the cross compiler '{route.cc[0]}' "
                                f"is not installed{hint}")
    emu = shutil.which(route.emulator[0])
    if not emu:
        raise TargetUnavailable(f"target {target.name}: the emulator '{route.emulator[0]}' "
                                f"is not installed{hint}")
    for path in route.needs:
        if not os.path.exists(path):
            raise TargetUnavailable(f"target {target.name}: {path} is missing (the cross "
                                    f"sysroot or linker){hint}")
    return Toolchain((cc,) + tuple(route.cc[1:]), (emu,) + tuple(route.emulator[1:]),
                     compiler_version(cc))


# --------------------------------------------------------------------------- sources

def driver_source(program, nbytes) -> str:
    """C text of ``main`` for a kernel's translation unit (see the module docstring);
    ``nbytes``: the byte size of every declared array, in declaration order."""
    from .codegen.c import c_signature_types
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


# --------------------------------------------------------------------------- compiling

def route_cflags(target: Target, opt=None) -> tuple:
    """The cross route's cflags, the optimisation level replaced by ``opt`` (e.g. -O1)."""
    flags = tuple(target.cross.cflags)
    if opt:
        flags = tuple(opt if f.startswith("-O") else f for f in flags)
    return flags


def _shim_object(tools: Toolchain, target: Target, timeout: float) -> str:
    """The KMPC_SHIM object for this toolchain (compiled once into the cache)."""
    flags = tuple(f for f in target.cross.cflags if f != "-fopenmp") + ("-c",)
    key = cache_key(KMPC_SHIM, " ".join(tools.cc), tools.version, flags)
    final = cache_dir() / f"kmpc-{key[:40]}.o"
    if final.exists():
        return str(final)
    work = tempfile.mkdtemp(prefix="build-", dir=cache_dir())
    try:
        src, obj = Path(work) / "kmpc.c", Path(work) / "kmpc.o"
        src.write_text(KMPC_SHIM)
        code, text = _run([*tools.cc, *flags, "-o", str(obj), str(src)], work, timeout)
        if code != 0 or not obj.exists():
            raise CompileError(f"the OpenMP shim failed to compile (exit {code}):\n"
                               + _errors(text))
        os.replace(obj, final)
        return str(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compile_executable(source: str, target, opt=None, timeout: float = 120) -> CrossCompiled:
    """Compile a translation unit with a ``main`` (``driver_source``) for a foreign target
    into ``<cache>/<key>.<target>`` (cached and atomic like ``compile.compile_shared``)."""
    target = get_target(target)
    tools = check_route(target)
    route = target.cross
    cflags = route_cflags(target, opt)
    flags = cflags + tuple(route.ldflags)
    runtime = route.openmp
    if runtime == "kmpc-shim":                 # executables link the shim: a new shim, new keys
        runtime += ":" + hashlib.sha256(KMPC_SHIM.encode()).hexdigest()[:16]
    key = cache_key(source, " ".join(tools.cc), tools.version, flags + (runtime,))
    root = cache_dir()
    final = root / f"{key[:40]}.{target.name}"

    def result(cached, seconds):
        return CrossCompiled(str(final), key, cached, seconds, tools.version, flags,
                             tools.emulator, target.name)

    if final.exists():
        return result(True, 0.0)
    work = tempfile.mkdtemp(prefix="build-", dir=root)
    try:
        src, exe = Path(work) / "kernel.c", Path(work) / "kernel"
        src.write_text(source)
        start = time.perf_counter()
        if route.openmp == "kmpc-shim":
            shim = _shim_object(tools, target, timeout)
            obj = Path(work) / "kernel.o"
            steps = [[*tools.cc, *cflags, "-c", "-o", str(obj), str(src)],
                     [*tools.cc, *(f for f in cflags if f != "-fopenmp"), "-o", str(exe),
                      str(obj), shim, *route.ldflags]]
        else:
            steps = [[*tools.cc, *cflags, "-o", str(exe), str(src), *route.ldflags]]
        for cmd in steps:
            code, text = _run(cmd, work, timeout)
            if code != 0:
                raise CompileError(f"{Path(tools.cc[0]).name} ({target.name}) failed "
                                   f"(exit {code}):\n" + _errors(text.replace(str(src), "kernel.c")))
        if not exe.exists():
            raise CompileError(f"{Path(tools.cc[0]).name} ({target.name}) made no executable")
        seconds = time.perf_counter() - start
        os.replace(src, root / f"{key[:40]}.c")
        os.replace(exe, final)
        return result(False, seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def assembly(source: str, target, opt=None, timeout: float = 120) -> str:
    """The assembly the target's compiler makes of a translation unit (``-S``): the cross
    route for a foreign target, else the host compiler with the target's flags."""
    from .compile import find_compiler
    target = get_target(target)
    if is_foreign(target):
        cc, cflags = check_route(target).cc, route_cflags(target, opt)
    else:
        cc = (find_compiler(),)
        cflags = tuple(opt if opt and f.startswith("-O") else f for f in target.cflags)
    with tempfile.TemporaryDirectory(prefix="dojo-asm-") as work:
        src, out = Path(work) / "kernel.c", Path(work) / "kernel.s"
        src.write_text(source)
        code, text = _run([*cc, *cflags, "-S", "-o", str(out), str(src)], work, timeout)
        if code != 0 or not out.exists():
            raise CompileError(f"{Path(cc[0]).name} -S failed (exit {code}):\n"
                               + _errors(text.replace(str(src), "kernel.c")))
        return out.read_text()


# --------------------------------------------------------------------------- running

def run_executable(compiled: CrossCompiled, data: bytes, threads=None,
                   timeout: float = 300) -> bytes:
    """Run a cross-compiled kernel under its emulator on the bytes of its arrays; the
    bytes of its outputs. EmulationError on a crash, a bad exit or a timeout."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(int(threads))
    with tempfile.TemporaryDirectory(prefix="dojo-emu-") as work:
        inp, out = os.path.join(work, "in.bin"), os.path.join(work, "out.bin")
        with open(inp, "wb") as f:
            f.write(data)
        try:
            code, err = run_in_group([*compiled.emulator, compiled.path, inp, out], work,
                                     timeout, env=env, text=False)
        except subprocess.TimeoutExpired:
            raise EmulationError(f"timed out after {timeout:g} s under "
                                 f"{Path(compiled.emulator[0]).name}") from None
        if code != 0 or not os.path.exists(out):
            lines = err.decode(errors="replace").strip().splitlines()
            detail = f": {lines[-1]}" if lines else ""
            raise EmulationError(f"crashed under {Path(compiled.emulator[0]).name} "
                                 f"(exit code {code}){detail}")
        with open(out, "rb") as f:
            return f.read()


# --------------------------------------------------------------------------- assembly

_PATTERNS = {
    # SVE: any instruction with a z register operand (z0.s, z3.d, ...)
    "sve": re.compile(r"\bz\d+\.[bhsdq]\b"),
    # NEON / Advanced SIMD: a v register with an arrangement (v0.4s) or a q register load
    "neon": re.compile(r"\bv\d+\.\d*[bhsd]\b|\bq\d+\b"),
}


def vector_instructions(asm: str, target) -> dict:
    """Counts of the target's vector instructions in an assembly listing:
    aarch64 {'sve', 'neon', 'fmla' (SVE or NEON), 'total'}; riscv64 {'rvv' (every v*
    instruction), 'vle', 'vse', 'vfmacc' (the fused multiply-adds vfmacc/vfmadd/vfmsac...),
    'total'}; x86 {'total'} (ymm/zmm operands)."""
    target = get_target(target)
    comment = "//" if target.arch == "aarch64" else "#"
    lines = [l.split(comment)[0].strip() for l in asm.splitlines()]
    insns = [l for l in lines if l and not l.endswith(":") and not l.startswith(".")]
    if target.arch == "aarch64":
        sve = sum(1 for l in insns if _PATTERNS["sve"].search(l))
        neon = sum(1 for l in insns if _PATTERNS["neon"].search(l) and not _PATTERNS["sve"].search(l))
        fmla = sum(1 for l in insns if l.split()[0] in ("fmla", "fmad", "fmls", "fmsb")
                   and (_PATTERNS["sve"].search(l) or _PATTERNS["neon"].search(l)))
        return {"sve": sve, "neon": neon, "fmla": fmla, "total": sve + neon}
    if target.arch == "riscv64":
        mnems = [l.split()[0] for l in insns]
        rvv = [m for m in mnems if re.match(r"v[a-z]", m)]
        return {"rvv": len(rvv),
                "vle": sum(1 for m in rvv if re.match(r"vle\d+(ff)?\.v", m)),
                "vse": sum(1 for m in rvv if re.match(r"vse\d+\.v", m)),
                "vfmacc": sum(1 for m in rvv if re.match(r"vfn?m(acc|add|sac|sub)\.", m)),
                "total": len(rvv)}
    wide = sum(1 for l in insns if re.search(r"%[yz]mm\d+", l))
    return {"total": wide}


__all__ = ["TargetUnavailable", "EmulationError", "CrossCompiled", "Toolchain", "check_route",
           "driver_source", "compile_executable", "assembly", "run_executable",
           "vector_instructions", "route_cflags", "KMPC_SHIM"]

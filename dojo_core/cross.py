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

This module owns the toolchain check, compiling, running and reading assembly; the C text
it adds (``driver_source``, ``KMPC_SHIM``) is ``cross_sources.py``, re-exported here.
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

from .codegen.targets import Target, get_target, host_arch, is_foreign
from .compile import (CompileError, Compiled, _errors, _run, cache_dir, cache_key,
                      compiler_version, find_compiler, run_in_group)
from .cross_sources import KMPC_MAX_ARGS, KMPC_SHIM, driver_source
from .errors import Unlocated


class TargetUnavailable(CompileError):
    """The target cannot be built and run on this machine; str() says why."""


class EmulationError(Unlocated):
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
           "vector_instructions", "route_cflags", "KMPC_SHIM", "KMPC_MAX_ARGS"]

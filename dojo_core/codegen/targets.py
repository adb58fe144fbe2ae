"""CPU target descriptions for the C code generator and the harness (DESIGN.md section 5).

A ``Target`` is a frozen description of one ISA family: the SIMD register width the
generator lowers ``vector`` loops to (GCC vector extensions), the compiler flags, and the
vector math library the generated code may call. ``TARGETS`` holds one per supported ISA;
``detect_host_target()`` reads ``/proc/cpuinfo`` (and probes glibc's libmvec) to pick the
one for this machine.

Flags: ``-O3 -march=native -fopenmp`` plus ``-fno-math-errno -fno-trapping-math
-ffp-contract=fast``. These are the value-safe part of ``-ffast-math``: no errno means the
libm calls are pure and ``sqrtf`` becomes an instruction, no trapping lets the vectorizer
if-convert ``select``/``max``; contraction to FMA changes results by at most a rounding
per operation. ``-ffinite-math-only`` is deliberately left out: kernels use ``-inf`` as the
identity of ``max`` (softmax) and the outputs must keep NaN/inf semantics. glibc only marks
``expf`` & co. as SIMD functions under ``__FAST_MATH__``, so instead of ``-ffast-math`` the
generated C redeclares the functions it uses with ``__attribute__((simd("notinbranch")))``
when ``libmvec`` is set, and links ``-lmvec``: loops that gcc auto-vectorizes then call
``_ZGVeN16v_expf`` and friends, and explicitly vectorized code calls them directly
(``libmvec_name``) -- except f32 ``exp`` in explicit vector loops, which is an inline
polynomial by default (``vector_exp``; ``c_math.vexpf_text``): inlined, it made the softmax
schedule about 1.6-2x faster on Zen 5 than the libmvec call (measured in one run). Only the
x86 targets are measured here (gcc 12.2, glibc 2.36, Zen 5). The Arm and RISC-V targets
are compiled and run on x86 through their ``cross`` route (``CrossRoute``: a cross
compiler, its flags, and qemu-user; ``dojo_core/cross.py``), so their code is checked for
correctness and for its vector instructions, never timed.

arm-sve fixes the vector length at 256 bits (``-msve-vector-bits=256``, the length of
Graviton 3 / Neoverse V1): gcc lowers GCC vector types to SVE only at a known length
(without it, 16-byte vectors stay NEON). ``detect_host_target`` on an SVE machine adapts the
width to the machine's length (``/proc/sys/abi/sve_default_vector_length``). riscv-rvv
assumes VLEN >= 256 in the cross route: gcc 12 emits no RVV at all, so it is built with
clang 14 (``-riscv-v-vector-bits-min=256``) against the riscv64 gcc's sysroot; clang's
OpenMP calls libomp's ``__kmpc_*`` entry points, which ``cross.KMPC_SHIM`` maps onto the
cross libgomp (Debian has no riscv64 libomp).

x86-avx2 adds ``-mno-avx512f``, so that its code is AVX2 code on a machine with AVX-512
too (``-march=native`` there would let gcc use 32 vector registers, EVEX encodings and the
AVX-512VL paths of the vector helpers): measured here, it is what an AVX2 machine runs.
It also adds ``-mtune=haswell``: tuned for Zen 3 (gcc 12's ``-march=native`` there), gcc
folds every load of an unrolled register tile into its FMA as a memory operand, so a 4x16
GEMM micro-kernel reloads each B vector once per row and becomes load-bound (about 45
GFLOP/s); Haswell's cost model keeps the two B vectors in registers (about 78 GFLOP/s, 76% of
the FMA peak; both measured on a Zen 3 core in one run).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import platform
from dataclasses import dataclass, replace
from functools import lru_cache

from ..machine import cpuinfo_text, parse_cpuinfo

COMMON_FLAGS = ("-O3", "-fopenmp", "-fno-math-errno", "-fno-trapping-math",
                "-ffp-contract=fast", "-std=gnu11")

# math functions of the IR that have glibc libmvec variants (f32 name, f64 name)
MVEC_FUNCTIONS = {"exp": ("expf", "exp"), "log": ("logf", "log"), "tanh": ("tanhf", "tanh"),
                  "erf": ("erff", "erf"), "pow": ("powf", "pow")}


@dataclass(frozen=True)
class CrossRoute:
    """How to build and run a target's code on a machine of another ISA: the compiler
    command (argv prefix), the flags that replace the target's native ``cflags`` and
    ``ldflags``, the emulator command the executable runs under (argv prefix), the files
    that must exist (sysroots, linkers) and the Debian packages that provide them all.
    ``openmp``: ``"libgomp"`` (gcc's own runtime) or ``"kmpc-shim"`` (clang's libomp entry
    points over libgomp, ``cross.KMPC_SHIM``)."""
    cc: tuple
    cflags: tuple
    ldflags: tuple
    emulator: tuple
    needs: tuple = ()
    packages: str = ""
    openmp: str = "libgomp"


@dataclass(frozen=True)
class Target:
    """One CPU ISA: what the C generator and the compiler need to know."""
    name: str
    arch: str                   # x86_64 | aarch64 | riscv64
    vector_bytes: int           # SIMD register width the vector lowering uses
    cflags: tuple               # compiler flags (optimisation, ISA, OpenMP, math)
    ldflags: tuple = ()         # extra link flags
    # glibc vector ABI ISA letter per vector width in bytes (x86: b=SSE, d=AVX2, e=AVX-512)
    mvec_isa: tuple = ()        # ((bytes, letter), ...)
    libmvec: tuple = ()         # C functions (expf, tanh, ...) with libmvec variants here
    description: str = ""
    # f32 exp in explicit vector loops: "poly" (inline polynomial, c_math.vexpf_text) or
    # "libmvec" (the libmvec call where the target has one, else the polynomial)
    vector_exp: str = "poly"
    # how to build and run it on another ISA (None: native only)
    cross: CrossRoute = None
    # bytes of the last-level cache the code runs with (0: unknown). Filled from the
    # machine (``host_cache_bytes``) by ``get_target``/``detect_host_target`` for targets
    # that run here; the C generator streams stores (non-temporal) past a kernel whose
    # arrays do not fit in it
    cache_bytes: int = 0
    # bytes of a data cache line: the step between the addresses a ``prefetch`` hints
    # (``c_prefetch``). 64 on every target here: x86-64 (Intel's optimisation manual and
    # AMD's: 64-byte lines on every core since the Pentium 4 and K8; CPUID leaf 1 reports
    # it as the CLFLUSH line size), AArch64 (the Neoverse N1/V1/V2 and Cortex-A7x TRMs: 64-byte
    # L1D and L2 lines; Apple's cores use 128), RISC-V (SiFive U74/P550 and T-Head C910
    # manuals: 64-byte lines; the Zicbop spec leaves the block size to the implementation)
    cache_line_bytes: int = 64
    # whether the compiler builds this target's vectors from unrolled scalar moves (SLP):
    # the C generator unrolls a register tile's zeroing and store-back for it (``c``).
    # gcc does on x86 and NEON; at a fixed SVE length it builds NEON vectors, and the
    # RISC-V route's clang 14 left them scalar (element stores), so those keep the loops
    slp_vectors: bool = True

    @property
    def flags(self) -> tuple:
        """All compiler flags, link flags included."""
        return tuple(self.cflags) + tuple(self.ldflags)

    def lanes(self, itemsize: int) -> int:
        return max(1, self.vector_bytes // itemsize)

    @property
    def vector_registers(self) -> int:
        """The architectural SIMD registers the generated code can hold values in: 32 on
        AArch64 (NEON and SVE), RISC-V V and x86 with AVX-512; 16 on x86 below AVX-512."""
        if self.arch == "x86_64":
            return 32 if self.vector_bytes >= 64 else 16
        return 32 if self.arch in ("aarch64", "riscv64") else 16

    @property
    def vector_gathers(self) -> bool:
        """Whether the ISA loads a vector from strided addresses in one instruction at the
        generated width: x86 from AVX2 on (``vgatherdps``/``vgatherdpd``; AVX-512F at 64
        bytes). The vector lowering then reads a strided operand with a gather."""
        return self.arch == "x86_64" and self.vector_bytes >= 32

    def libmvec_name(self, cfunc: str, nbytes: int, nargs: int = 1):
        """The libmvec symbol of cfunc on vectors of nbytes bytes, or None."""
        if cfunc not in self.libmvec:
            return None
        letter = dict(self.mvec_isa).get(nbytes)
        if letter is None:
            return None
        itemsize = 4 if cfunc.endswith("f") and cfunc not in ("erf",) else 8
        return f"_ZGV{letter}N{nbytes // itemsize}{'v' * nargs}_{cfunc}"

    def with_libmvec(self, functions) -> "Target":
        return replace(self, libmvec=tuple(sorted(functions)))


_X86_MVEC = ((16, "b"), (32, "d"), (64, "e"))
_ARM_SYSROOT = "/usr/aarch64-linux-gnu"
_RISCV_SYSROOT = "/usr/riscv64-linux-gnu"
_RISCV_LD = "/usr/bin/riscv64-linux-gnu-ld"
_ALL_MVEC = tuple(sorted(n for pair in MVEC_FUNCTIONS.values() for n in pair))

TARGETS = {
    "x86-avx512": Target(
        "x86-avx512", "x86_64", 64, COMMON_FLAGS + ("-march=native", "-mprefer-vector-width=512"),
        ("-lmvec", "-lm"), _X86_MVEC, _ALL_MVEC,
        "x86-64 with AVX-512: 512-bit vectors (16 f32 lanes)"),
    "x86-avx2": Target(
        "x86-avx2", "x86_64", 32,
        COMMON_FLAGS + ("-march=native", "-mno-avx512f", "-mtune=haswell"),
        ("-lmvec", "-lm"), _X86_MVEC, _ALL_MVEC,
        "x86-64 with AVX2 and FMA: 256-bit vectors (8 f32 lanes)"),
    "arm-neon": Target(
        "arm-neon", "aarch64", 16, COMMON_FLAGS + ("-mcpu=native",), ("-lm",), (), (),
        "AArch64 Advanced SIMD: 128-bit vectors (4 f32 lanes)",
        cross=CrossRoute(("aarch64-linux-gnu-gcc",), COMMON_FLAGS + ("-march=armv8-a",),
                         ("-lm",), ("qemu-aarch64", "-cpu", "max", "-L", _ARM_SYSROOT),
                         (_ARM_SYSROOT,), "gcc-aarch64-linux-gnu qemu-user")),
    "arm-sve": Target(
        "arm-sve", "aarch64", 32, COMMON_FLAGS + ("-mcpu=native", "-msve-vector-bits=256"),
        ("-lm",), (), (),
        "AArch64 SVE at a 256-bit vector length (8 f32 lanes, -msve-vector-bits=256); "
        "detect_host_target adapts it to the machine's length",
        cross=CrossRoute(("aarch64-linux-gnu-gcc",),
                         COMMON_FLAGS + ("-march=armv8.2-a+sve", "-msve-vector-bits=256"),
                         ("-lm",), ("qemu-aarch64", "-cpu", "max,sve256=on", "-L", _ARM_SYSROOT),
                         (_ARM_SYSROOT,), "gcc-aarch64-linux-gnu qemu-user"),
        slp_vectors=False),
    "riscv-rvv": Target(
        "riscv-rvv", "riscv64", 16, COMMON_FLAGS + ("-march=rv64gcv",), ("-lm",), (), (),
        "RISC-V with the V extension: explicit vectors of 128 bits (VLEN >= 128)",
        cross=CrossRoute(("clang-14", "--target=riscv64-linux-gnu"),
                         COMMON_FLAGS + ("-march=rv64gcv", "-mllvm", "-riscv-v-vector-bits-min=256"),
                         ("-fuse-ld=" + _RISCV_LD, "-lgomp", "-lm"),
                         ("qemu-riscv64", "-cpu", "rv64,v=true,vlen=256,vext_spec=v1.0",
                          "-L", _RISCV_SYSROOT),
                         (_RISCV_SYSROOT, _RISCV_LD), "gcc-riscv64-linux-gnu clang-14 qemu-user",
                         openmp="kmpc-shim"),
        slp_vectors=False),
    "generic": Target(
        "generic", platform.machine() or "unknown", 16, COMMON_FLAGS, ("-lm",), (), (),
        "any CPU: 128-bit generic vectors, no ISA flags"),
}


def get_target(name) -> Target:
    """A target by name (a Target passes through); KeyError names the known ones. A named
    target whose code runs natively here carries this machine's cache size."""
    if isinstance(name, Target):
        return name
    if name is None:
        return detect_host_target()
    try:
        target = TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r} (known: {', '.join(TARGETS)})") from None
    return _with_host_cache(target)


def _with_host_cache(target: Target) -> Target:
    if target.cache_bytes or is_foreign(target):
        return target
    return replace(target, cache_bytes=host_cache_bytes())


def parse_cache_size(text: str) -> int:
    """Bytes of a sysfs cache ``size`` text (``32768K``, ``1M``, ``512``); 0 if unreadable."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale if digits.isdigit() else 0


@lru_cache(maxsize=1)
def host_cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The size of this machine's last-level data (or unified) cache, as Linux reports it
    for cpu0 (``/sys/devices/system/cpu/cpu0/cache/index*/``); 0 where it is not known."""
    best = (0, 0)
    for index in glob.glob(os.path.join(root, "index*")):
        try:
            with open(os.path.join(index, "type"), encoding="ascii") as f:
                kind = f.read().strip()
            with open(os.path.join(index, "level"), encoding="ascii") as f:
                level = int(f.read().strip())
            with open(os.path.join(index, "size"), encoding="ascii") as f:
                size = parse_cache_size(f.read())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified"):
            best = max(best, (level, size))
    return best[1]


def _cpuinfo_flags(text: str) -> tuple:
    """(RISC-V isa line, set of feature words) from the text of /proc/cpuinfo (machine.py)."""
    info = parse_cpuinfo(text)
    return info.isa, set(info.words)


def target_from_cpuinfo(text: str, machine: str) -> Target:
    """The target for a machine of this /proc/cpuinfo text and platform.machine()."""
    isa, words = _cpuinfo_flags(text)
    if machine in ("x86_64", "AMD64", "amd64"):
        if {"avx512f", "avx512vl", "avx512dq", "avx512bw"} <= words:
            return TARGETS["x86-avx512"]
        if {"avx2", "fma"} <= words:
            return TARGETS["x86-avx2"]
        return TARGETS["generic"]
    if machine in ("aarch64", "arm64"):
        return TARGETS["arm-sve"] if "sve" in words else TARGETS["arm-neon"]
    if machine.startswith("riscv"):
        base = isa.split("_")[0]
        if base.startswith("rv64") and "v" in base[4:]:
            return TARGETS["riscv-rvv"]
    return TARGETS["generic"]


def _libmvec_functions(target: Target) -> tuple:
    """The functions of target.libmvec whose widest vector variant glibc here exports."""
    if not target.mvec_isa:
        return ()
    path = ctypes.util.find_library("mvec")
    if not path:
        return ()
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return ()
    found = []
    for cfunc in target.libmvec:
        nargs = 2 if cfunc.startswith("pow") else 1
        names = [target.libmvec_name(cfunc, nbytes, nargs) for nbytes, _ in target.mvec_isa]
        if all(n is not None and hasattr(lib, n) for n in names):
            found.append(cfunc)
    return tuple(found)


_ARCH_ALIASES = {"amd64": "x86_64", "AMD64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def host_arch() -> str:
    """This machine's ISA family in Target.arch spelling (x86_64, aarch64, riscv64)."""
    machine = platform.machine() or "unknown"
    return _ARCH_ALIASES.get(machine, machine)


def is_foreign(target: Target) -> bool:
    """True when the target's code cannot run natively here (another ISA): it is built and
    run through ``target.cross`` (dojo_core/cross.py) or refused."""
    return _ARCH_ALIASES.get(target.arch, target.arch) != host_arch()


def _sve_length(target: Target) -> Target:
    """arm-sve at this machine's SVE vector length (the kernel's default for new
    processes), when it is known and not the description's 256 bits."""
    try:
        with open("/proc/sys/abi/sve_default_vector_length", encoding="ascii") as f:
            nbytes = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return target
    if nbytes == target.vector_bytes or nbytes < 16 or nbytes & (nbytes - 1):
        return target
    flags = tuple(f"-msve-vector-bits={8 * nbytes}" if f.startswith("-msve-vector-bits=") else f
                  for f in target.cflags)
    return replace(target, vector_bytes=min(nbytes, 64), cflags=flags)


@lru_cache(maxsize=1)
def detect_host_target() -> Target:
    """The target of this machine (from /proc/cpuinfo), libmvec narrowed to what the
    installed glibc provides."""
    target = target_from_cpuinfo(cpuinfo_text(), platform.machine())
    if target.name == "arm-sve":
        target = _sve_length(target)
    if target.libmvec:
        target = target.with_libmvec(_libmvec_functions(target))
    return _with_host_cache(target)


__all__ = ["Target", "CrossRoute", "TARGETS", "MVEC_FUNCTIONS", "get_target",
           "detect_host_target", "target_from_cpuinfo", "host_arch", "is_foreign",
           "host_cache_bytes", "parse_cache_size"]

"""The local compile / run / measure harness for generated C (DESIGN.md section 5).

    build(program, target=None, opt=None) -> Library       compile (cached) and load
    run_c(program, inputs, ...) -> outputs                   same contract as interp.run
    measure(program, inputs, min_time=0.2, min_reps=3, warmup=1, threads=None,
            flush_cache=False, timeout=120) -> dict(median_s, min_s, max_s, q1_s, q3_s, reps, threads)
    verify(program, reference_program, inputs, ...) -> dict(verified, reference, errors)

``run_c``: inputs are checked like the interpreter checks them (every in/inout array,
declared shape and numpy dtype; bf16 inputs are rounded to bf16); outputs are fresh arrays;
``out`` and ``temp`` arrays start NaN-filled for floats (the most negative integer for
ints), 64-byte aligned. ``timeout`` (seconds) runs the kernel in a child process that is
killed when it takes longer (RunError); without it the kernel runs in this process.

``measure`` always runs in a child process (a fresh Python, fed by a pipe) so that a hanging
or crashing kernel never takes the caller with it. Timing happens in C: ``dojo_time``
(``codegen.c_entry.timing_entry``) calls the kernel ``reps`` times with clock_gettime around each
call, optionally writing a 64 MiB buffer before each call to flush the caches, with the
OpenMP thread count set by omp_set_num_threads. After ``warmup`` calls, one timed call
sizes the repetitions: at least ``min_reps`` and enough for ``min_time`` seconds in total.

A foreign target (``targets.is_foreign``: Arm or RISC-V on this x86 machine) is built by its
cross route into an executable and run under qemu-user (``dojo_core/cross.py``): ``run_c``
and ``verify`` behave as for the host, ``timeout`` defaults to 300 s there, and ``measure``
refuses (RunError): an emulator's time is not a measurement. A target that cannot be built
and run here raises ``cross.TargetUnavailable`` (a CompileError), never a host build.

``verify`` compares outputs per dtype: f32 |got - ref| <= 1e-4 |ref| + 1e-5 max|ref|,
f64 1e-9 / 1e-9, f16 and bf16 1e-2 / 1e-2, integers exactly; NaN and inf must match. The
reference program runs on the interpreter when its estimated work is small
(``INTERP_LIMIT`` statement instances, about 2 s), else compiled.
"""
from __future__ import annotations

import ctypes
import math
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

from . import cross, ir
from .codegen import generate_c, get_target, timing_entry
from .codegen.targets import is_foreign
from .codegen.c_expr import CTYPES
from .compile import CompileError, Compiled, compile_shared
from .errors import Unlocated
from .kernels import estimated_work
from .tolerance import relative_tolerance

FLUSH_BYTES = 64 << 20
INTERP_LIMIT = 2_000_000
MAX_REPS = 1_000_000
NUMPY_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.float32,
                "i32": np.int32, "i64": np.int64, "i8": np.int8}
TOLERANCE = {"f32": (1e-4, 1e-5), "bf16": (1e-2, 1e-2), "f16": (1e-2, 1e-2),
             "f64": (1e-9, 1e-9), "i32": (0, 0), "i64": (0, 0), "i8": (0, 0)}


class RunError(Unlocated):
    """A kernel run or measurement failed (timeout, crash, bad inputs); str() says why."""


@dataclass
class Library:
    """A compiled, loaded kernel."""
    program: ir.Program
    compiled: Compiled
    target: object
    cflags: tuple
    _dll: object = None

    @property
    def path(self) -> str:
        return self.compiled.path

    @property
    def emulated(self) -> bool:
        """True for an executable of a foreign target that runs under an emulator."""
        return isinstance(self.compiled, cross.CrossCompiled)

    def dll(self):
        if self.emulated:
            raise RunError(f"kernel {self.program.name} is built for {self.target.name}, "
                           f"which runs only under emulation here (no shared library)")
        if self._dll is None:
            self._dll = _load(self.compiled.path, len(self.program.arrays))
        return self._dll


_LOADED = {}


def _load(path: str, nargs: int):
    dll = _LOADED.get(path)
    if dll is None:
        dll = ctypes.CDLL(path)
        dll.dojo_kernel.argtypes = [ctypes.c_void_p] * nargs
        dll.dojo_kernel.restype = None
        dll.dojo_time.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64, ctypes.c_int,
                                  ctypes.c_int64, ctypes.POINTER(ctypes.c_double)]
        dll.dojo_time.restype = ctypes.c_int
        dll.dojo_set_threads.argtypes = [ctypes.c_int]
        dll.dojo_set_threads.restype = ctypes.c_int
        _LOADED[path] = dll
    return dll


def flags_for(target, opt=None) -> tuple:
    """The target's cflags, with the optimisation level replaced by ``opt`` (e.g. '-O1')."""
    cflags = tuple(target.cflags)
    if opt:
        cflags = tuple(opt if f.startswith("-O") else f for f in cflags)
    return cflags


def build(program: ir.Program, target=None, opt=None, timeout: float = 120) -> Library:
    """Generate, compile (through the cache) and describe the library of a program."""
    target = get_target(target)
    if is_foreign(target):
        cross.check_route(target)              # refuse before generating anything
        nbytes = [int(np.prod(_shape(program, d), dtype=np.int64))
                  * np.dtype(NUMPY_DTYPES[d.dtype]).itemsize for d in program.arrays]
        source = generate_c(program, target) + cross.driver_source(program, nbytes)
        compiled = cross.compile_executable(source, target, opt, timeout=timeout)
        return Library(program, compiled, target, cross.route_cflags(target, opt))
    source = generate_c(program, target) + timing_entry(program)
    cflags = flags_for(target, opt)
    compiled = compile_shared(source, cflags, target.ldflags, timeout=timeout)
    return Library(program, compiled, target, cflags)


# --------------------------------------------------------------------------- arrays

def aligned_empty(shape, dtype, align: int = 64) -> np.ndarray:
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    nbytes = max(1, count) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + nbytes].view(dtype)[:count].reshape(shape)


def _shape(program, decl) -> tuple:
    from .kernels import array_shape
    return array_shape(program, decl)


def _round_bf16(x: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).copy()
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    bits = np.where(np.isnan(x), bits, rounded).astype(np.uint32)
    return bits.view(np.float32).reshape(np.shape(x))


def prepare(program: ir.Program, inputs: dict, empty=None):
    """(arrays in declaration order, outputs dict) for one run; inputs are copied.  Every
    buffer comes from ``empty(shape, dtype)`` (default ``aligned_empty``: 64-byte aligned)
    and is written in full before it is returned."""
    declared = {d.name: d for d in program.arrays}
    for name in inputs:
        if name not in declared or declared[name].kind not in ("in", "inout"):
            raise RunError(f"{name!r} is not an input of kernel {program.name}")
    empty = empty or aligned_empty
    arrays, outputs = [], {}
    for decl in program.arrays:
        shape, dtype = _shape(program, decl), np.dtype(NUMPY_DTYPES[decl.dtype])
        buf = empty(shape, dtype)
        if decl.kind in ("in", "inout"):
            if decl.name not in inputs:
                raise RunError(f"missing input {decl.name!r} ({decl.kind} {decl.dtype})")
            value = np.asarray(inputs[decl.name])
            if value.shape != shape:
                raise RunError(f"input {decl.name!r}: shape {value.shape}, expected {shape}")
            if value.dtype != dtype and not (value.ndim == 0 and np.can_cast(value.dtype, dtype, "same_kind")):
                raise RunError(f"input {decl.name!r}: dtype {value.dtype}, expected {dtype}")
            buf[...] = _round_bf16(value) if decl.dtype == "bf16" else value
        else:
            buf[...] = np.nan if dtype.kind == "f" else np.iinfo(dtype).min
        arrays.append(buf)
        if decl.kind in ("out", "inout"):
            outputs[decl.name] = buf
    return arrays, outputs


def _pointers(arrays):
    return [a.ctypes.data for a in arrays]


# --------------------------------------------------------------------------- child process

def _child_main() -> None:
    """Entry point of the child process: a pickled job on stdin, a pickled result written
    to the file the job names (stdout stays free for whatever the kernel prints)."""
    job = pickle.load(sys.stdin.buffer)
    try:
        arrays = [_realign(a) for a in job["arrays"]]
        dll = _load(job["path"], len(arrays))
        if job["kind"] == "run":
            if job["threads"]:
                dll.dojo_set_threads(int(job["threads"]))
            dll.dojo_kernel(*_pointers(arrays))
            result = ("ok", arrays)
        else:
            result = ("ok", _time_in_process(dll, arrays, **job["params"]))
    except BaseException as exc:                                    # noqa: BLE001
        result = ("error", f"{type(exc).__name__}: {exc}")
    with open(job["result"], "wb") as f:
        pickle.dump(result, f)


def _realign(a: np.ndarray) -> np.ndarray:
    b = aligned_empty(a.shape, a.dtype)
    b[...] = a
    return b


# A measuring child calls no BLAS. With one thread OpenBLAS starts no pool: its threads
# spin for about 0.1 s after the import, on the cores the kernel's threads are being timed on
# (seen on a 2-core machine, where they took a tenth of the samples of a 2-thread timing).
SINGLE_THREADED_BLAS = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                        "BLIS_NUM_THREADS": "1"}


def child_environment() -> dict:
    """The environment of a measuring child: this process's, with ``dojo_core`` importable
    and the BLAS libraries single-threaded (``SINGLE_THREADED_BLAS``; the kernel's own OpenMP
    threads are set per job, not through the environment)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, **SINGLE_THREADED_BLAS}
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _in_child(lib: Library, arrays, job: dict, timeout: float):
    """Run a job in a fresh Python process (killed after timeout seconds)."""
    env = child_environment()
    with tempfile.TemporaryDirectory(prefix="dojo-run-") as tmp:
        result_path = os.path.join(tmp, "result.pickle")
        payload = pickle.dumps({**job, "path": lib.path, "arrays": list(arrays),
                                "result": result_path})
        try:
            proc = subprocess.run([sys.executable, "-c",
                                   "from dojo_core.harness import _child_main; _child_main()"],
                                  input=payload, capture_output=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise RunError(f"kernel {lib.program.name} timed out after {timeout:g} s") from None
        if not os.path.exists(result_path):
            detail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise RunError(f"kernel {lib.program.name} crashed (exit code {proc.returncode})"
                           + (f": {detail[0]}" if detail[0] else ""))
        with open(result_path, "rb") as f:
            status, result = pickle.load(f)
    if status != "ok":
        raise RunError(f"kernel {lib.program.name} failed: {result}")
    return result


def _time_in_process(dll, arrays, min_time, min_reps, warmup, threads, flush_cache):
    ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*_pointers(arrays))
    flush = FLUSH_BYTES if flush_cache else 0
    nthreads = dll.dojo_set_threads(int(threads or 0))

    def timed(reps):
        times = (ctypes.c_double * reps)()
        if dll.dojo_time(ptrs, reps, int(threads or 0), flush, times) != 0:
            raise RunError("cannot allocate the cache flush buffer")
        return list(times)

    if warmup > 0:
        timed(warmup)
    first = max(timed(1)[0], 1e-9)
    reps = int(min(MAX_REPS, max(min_reps, math.ceil(min_time / first))))
    times = timed(reps)
    q1, _, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else (times[0], None, times[0])
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "q1_s": q1, "q3_s": q3, "reps": reps, "threads": nthreads}


# --------------------------------------------------------------------------- public API

def run_c(program: ir.Program, inputs: dict, target=None, threads=None, opt=None,
          timeout=None, library: Library = None) -> dict:
    """Run the compiled program once (see the module docstring); every out/inout array."""
    lib = library or build(program, target, opt)
    arrays, outputs = prepare(program, inputs)
    if lib.emulated:
        return _run_emulated(lib, arrays, outputs, threads, timeout or 300)
    if timeout is None:
        dll = lib.dll()
        if threads:
            dll.dojo_set_threads(int(threads))
        dll.dojo_kernel(*_pointers(arrays))
        return outputs
    result = _in_child(lib, arrays, {"kind": "run", "threads": threads}, timeout)
    names = [d.name for d in program.arrays]
    return {d.name: result[names.index(d.name)] for d in program.arrays
            if d.kind in ("out", "inout")}


def _run_emulated(lib: Library, arrays, outputs: dict, threads, timeout: float) -> dict:
    """run_c for an executable under its emulator: the arrays' bytes in, the outputs'
    bytes back into the output arrays (declaration order)."""
    data = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)
    try:
        back = cross.run_executable(lib.compiled, data, threads, timeout)
    except cross.EmulationError as exc:
        raise RunError(f"kernel {lib.program.name} ({lib.target.name}, emulated) {exc}") from None
    offset = 0
    for decl, buf in zip(lib.program.arrays, arrays):
        if decl.kind in ("out", "inout"):
            n = buf.nbytes
            if offset + n > len(back):
                raise RunError(f"kernel {lib.program.name} ({lib.target.name}, emulated) "
                               f"returned {len(back)} bytes of outputs, too few")
            buf[...] = np.frombuffer(back, dtype=buf.dtype, count=buf.size,
                                     offset=offset).reshape(buf.shape)
            offset += n
    return outputs


def measure(program: ir.Program, inputs: dict, min_time: float = 0.2, min_reps: int = 3,
            warmup: int = 1, threads=None, flush_cache: bool = False, timeout: float = 120,
            target=None, opt=None, library: Library = None) -> dict:
    """Time the compiled program in a child process (see the module docstring)."""
    chosen = library.target if library is not None else get_target(target)
    if is_foreign(chosen):
        raise RunError(f"target {chosen.name} runs only under emulation here: an emulator's "
                       f"time is not a measurement")
    lib = library or build(program, target, opt)
    arrays, _ = prepare(program, inputs)
    params = dict(min_time=min_time, min_reps=min_reps, warmup=warmup, threads=threads,
                  flush_cache=flush_cache)
    return _in_child(lib, arrays, {"kind": "time", "params": params}, timeout)


def compare(outputs: dict, reference: dict, program: ir.Program,
            reference_program: ir.Program | None = None) -> dict:
    """{name: worst error as a fraction of the allowed error (<= 1 passes)}; NaN/inf
    mismatches and shape mismatches count as inf.  ``program`` computed ``outputs`` (its
    dtypes are the outputs').  When ``reference_program`` computed ``reference`` in the same
    dtypes (checking a schedule against the untransformed kernel), long f32/f64 reductions of
    either widen the relative tolerance to their reassociation bounds (``tolerance.py``);
    against a float64 reference (None: numpy's, a library's quality gate) the dtype's
    tolerance holds as it is."""
    dtypes = {d.name: d.dtype for d in program.arrays}
    result = {}
    for name, ref in reference.items():
        got = np.asarray(outputs.get(name))
        ref = np.asarray(ref)
        if got.shape != ref.shape:
            result[name] = math.inf
            continue
        rtol, atol = TOLERANCE[dtypes[name]]
        if reference_program is not None:
            rtol = relative_tolerance([program, reference_program], name, rtol, dtypes[name])
        if ref.dtype.kind in "iu":
            result[name] = 0.0 if np.array_equal(got, ref) else math.inf
            continue
        g, r = got.astype(np.float64), ref.astype(np.float64)
        finite = np.isfinite(r)
        special_ok = np.array_equal(np.isnan(g), np.isnan(r)) and \
            np.array_equal(g[np.isinf(r)], r[np.isinf(r)])
        if not special_ok or not np.all(np.isfinite(g[finite])):
            result[name] = math.inf
            continue
        if not finite.any():
            result[name] = 0.0
            continue
        scale = float(np.max(np.abs(r[finite]))) or 1.0
        allowed = rtol * np.abs(r[finite]) + atol * scale
        err = np.abs(g[finite] - r[finite])
        result[name] = float(np.max(err / allowed)) if allowed.min() > 0 else \
            (0.0 if not err.any() else math.inf)
    return result


def verify(program: ir.Program, reference_program: ir.Program, inputs: dict, target=None,
           opt=None, reference: str = "auto", outputs=None, library: Library = None) -> dict:
    """Compare the compiled program's outputs with the reference program's:
    {'verified': bool, 'reference': 'interp' | 'c', 'errors': {name: worst/allowed}}."""
    if reference == "auto":
        reference = "interp" if estimated_work(reference_program) <= INTERP_LIMIT else "c"
    if outputs is None:
        outputs = run_c(program, inputs, target=target, opt=opt, library=library)
    if reference == "interp":
        from .interp import run
        want = run(reference_program, inputs)
    else:
        want = run_c(reference_program, inputs, target=target, opt=opt)
    errors = compare(outputs, want, program, reference_program)
    return {"verified": all(e <= 1.0 for e in errors.values()), "reference": reference,
            "errors": errors}


__all__ = ["Library", "RunError", "CompileError", "build", "run_c", "measure", "verify",
           "compare", "prepare", "estimated_work", "aligned_empty", "child_environment",
           "TOLERANCE", "CTYPES"]

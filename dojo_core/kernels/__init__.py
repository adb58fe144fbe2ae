"""The kernel library (DESIGN.md section 9): ``NAME.dojo`` files beside this module.

Pure Python + numpy. Guarantees:

* ``list_kernels()`` is the sorted list of the ``.dojo`` files here; each has an entry in
  ``catalog.CATALOG`` (``info(name)``) and a header named like its file.
* ``kernel_path(name)`` only ever points inside this folder; unknown or malformed names
  raise ``KeyError``.
* ``load_kernel(name, sizes)`` parses the file (``dojo_core.parser.parse``) and
  instantiates it at ``sizes`` (unknown size names raise ``KeyError``).
* ``reference(name, inputs, sizes)`` computes the outputs (``out`` and ``inout`` arrays) in
  float64 from the given inputs and casts them to the declared dtypes; it never modifies
  ``inputs``.
* ``random_inputs(program, seed)`` is deterministic in ``(program, seed)`` and returns an
  array of the declared shape and numpy dtype for every ``in`` and ``inout`` array (0-d
  arrays for scalars), uniform in the kernel's ``input_ranges`` (default [-1, 1]).
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from .. import ir
from .catalog import CATALOG, DEFAULT_RANGE, KernelInfo

__all__ = [
    "KERNEL_DIR", "KernelInfo", "NUMPY_DTYPES", "list_kernels", "kernel_path", "load_kernel",
    "info", "reference", "run_reference", "random_inputs", "array_shape", "declared_bytes",
    "steps_path", "steps_files", "estimated_work",
]

KERNEL_DIR = Path(__file__).resolve().parent
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# numpy has no bfloat16: bf16 arrays are held as float32 on the numpy side.
NUMPY_DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.float32,
    "i32": np.int32, "i64": np.int64, "i8": np.int8,
}


def list_kernels() -> list:
    """The names of the library kernels, sorted."""
    return sorted(p.stem for p in KERNEL_DIR.glob("*.dojo"))


def dojo_file(directory: Path, name: str) -> Optional[Path]:
    """``directory/NAME.dojo`` when that file exists, else None; KeyError when ``name`` is not
    a name (so no path outside ``directory`` is ever formed)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise KeyError(f"not a kernel name: {name!r}")
    path = directory / f"{name}.dojo"
    return path if path.is_file() else None


def kernel_path(name: str) -> Path:
    """The path of ``NAME.dojo``; KeyError for a name that is not a library kernel."""
    path = dojo_file(KERNEL_DIR, name)
    if path is None:
        raise KeyError(f"no kernel named {name!r} (known: {', '.join(list_kernels())})")
    return path


def steps_path(name: str, target=None) -> Optional[Path]:
    """The best known step sequence of a kernel for a target, or None.

    ``NAME.TARGET.steps`` (e.g. ``matmul.x86-avx2.steps``) when ``target`` (a target name
    or ``codegen.targets.Target``) is given and that file exists, else ``NAME.steps``
    (tuned for the widest vectors, AVX-512), else None.  The best register tile depends on
    the machine: 32 accumulators fit AVX-512's 32 registers, not AVX2's 16."""
    if target is not None:
        tname = getattr(target, "name", target)
        specific = kernel_path(name).with_name(f"{name}.{tname}.steps")
        if specific.is_file():
            return specific
    path = kernel_path(name).with_suffix(".steps")
    return path if path.is_file() else None


def steps_files(name: str) -> list:
    """Every schedule of a kernel: ``NAME.steps`` first, then the target-specific ones."""
    base = kernel_path(name)
    found = [base.with_suffix(".steps")] if base.with_suffix(".steps").is_file() else []
    return found + sorted(base.parent.glob(f"{name}.*.steps"))


@lru_cache(maxsize=None)
def _load_default(name: str, mtime_ns: int) -> ir.Program:
    from ..parser import parse   # imported late: the library table works without the parser
    path = kernel_path(name)
    return parse(path.read_text(), str(path))


def load_kernel(name: str, sizes: Optional[Mapping] = None) -> ir.Program:
    """The parsed kernel, at its default sizes or instantiated at ``sizes``."""
    path = kernel_path(name)
    program = _load_default(name, path.stat().st_mtime_ns)
    return program.with_sizes(dict(sizes)) if sizes else program


def info(name: str) -> KernelInfo:
    """The catalog entry of a kernel; KeyError for unknown names."""
    try:
        return CATALOG[name]
    except KeyError:
        raise KeyError(f"no kernel named {name!r} in the catalog") from None


# ----------------------------------------------------------------------------- shapes

def eval_dim(expr, env: Mapping) -> int:
    """The integer value of a dimension or index expression under ``env`` (name -> int)."""
    if isinstance(expr, ir.Const):
        return int(expr.value)
    if isinstance(expr, ir.Var):
        return int(env[expr.name])
    if isinstance(expr, ir.Neg):
        return -eval_dim(expr.operand, env)
    if isinstance(expr, ir.BinOp):
        a, b = eval_dim(expr.lhs, env), eval_dim(expr.rhs, env)
        ops = {"+": a + b, "-": a - b, "*": a * b}
        if expr.op in ops:
            return ops[expr.op]
        if expr.op == "//":
            return a // b
        if expr.op == "%":
            return a % b
    if isinstance(expr, ir.Call) and expr.func in ("min", "max"):
        values = [eval_dim(a, env) for a in expr.args]
        return min(values) if expr.func == "min" else max(values)
    raise ValueError(f"not an integer dimension expression: {expr!r}")


def array_shape(program: ir.Program, decl: ir.ArrayDecl) -> tuple:
    """The concrete shape of a declared array at the program's sizes (() for scalars)."""
    env = program.size_values
    return tuple(eval_dim(d, env) for d in decl.dims)


def declared_bytes(program: ir.Program) -> int:
    """Bytes of every in/out array plus twice every inout array (temps excluded)."""
    total = 0
    for decl in program.arrays:
        if decl.kind == "temp":
            continue
        count = int(np.prod(array_shape(program, decl), dtype=np.int64))
        itemsize = {"f16": 2, "bf16": 2}.get(decl.dtype, np.dtype(NUMPY_DTYPES[decl.dtype]).itemsize)
        total += count * itemsize * (2 if decl.kind == "inout" else 1)
    return total


# ----------------------------------------------------------------------------- data

def estimated_work(program: ir.Program) -> int:
    """An upper bound on the number of statement instances (interval arithmetic on bounds)."""
    sizes = program.size_values

    def bound(expr, env, pick):
        try:
            return eval_dim(expr, {**sizes, **{k: v[pick] for k, v in env.items()}})
        except (ValueError, KeyError, ZeroDivisionError):
            return None

    def count(body, env, mult):
        total = 0
        for stmt in body:
            if isinstance(stmt, ir.Assign):
                total += mult
            elif isinstance(stmt, ir.Loop):
                los = [bound(stmt.lo, env, p) for p in (0, 1)]
                his = [bound(stmt.hi, env, p) for p in (0, 1)]
                if None in los + his:
                    return math.inf
                lo, hi = min(los), max(his)
                n = max(0, hi - lo)
                total += count(stmt.body, {**env, stmt.iterator: (lo, max(lo, hi - 1))}, mult * n)
        return total

    return count(program.body, {}, 1)


def random_inputs(program: ir.Program, seed: int = 0) -> dict:
    """Random arrays for every in and inout array of ``program`` (see module docstring).

    Ranges come from the catalog entry named like the program, when there is one.
    Integer arrays get integers in [low, high] of the range (rounded inwards).
    """
    entry = CATALOG.get(program.name)
    rng = np.random.default_rng(seed)
    arrays = {}
    for decl in program.arrays:
        if decl.kind not in ("in", "inout"):
            continue
        shape = array_shape(program, decl)
        low, high = entry.range_of(decl.name) if entry else DEFAULT_RANGE
        dtype = np.dtype(NUMPY_DTYPES[decl.dtype])
        arrays[decl.name] = np.asarray(random_values(rng, dtype, low, high, shape), dtype=dtype)
    return arrays


def random_values(rng, dtype, low: float, high: float, shape):
    """Values drawn from ``rng`` for an array of ``dtype``: integers in [ceil(low),
    floor(high)] for an integer dtype, else uniform floats in [low, high)."""
    if dtype.kind == "i":
        return rng.integers(int(np.ceil(low)), int(np.floor(high)) + 1, size=shape)
    return rng.uniform(low, high, size=shape)


def reference(name: str, inputs: Mapping, sizes: Optional[Mapping] = None,
              program: Optional[ir.Program] = None) -> dict:
    """The numpy reference outputs of kernel ``name`` for ``inputs`` at ``sizes``.

    Computed in float64 and cast to the dtypes declared in ``program`` (by default the
    library kernel at ``sizes``); every out and inout array is returned, nothing else.
    """
    entry = info(name)
    if program is None:
        program = load_kernel(name, sizes)
    elif sizes:
        program = program.with_sizes(dict(sizes))
    return run_reference(entry.reference, name, inputs, program)


def run_reference(function, name: str, inputs: Mapping, program: ir.Program) -> dict:
    """``function(x, sizes)`` on float64 copies of ``inputs``, every out and inout array of
    ``program`` checked for its declared shape and cast to its declared dtype."""
    x = {k: np.array(v, dtype=np.float64) for k, v in inputs.items()}
    result = function(x, program.size_values)
    outputs = {}
    for decl in program.arrays:
        if decl.kind in ("out", "inout"):
            value = np.asarray(result[decl.name])
            shape = array_shape(program, decl)
            if value.shape != shape:
                raise ValueError(f"reference of {name}.{decl.name} has shape {value.shape}, "
                                 f"declared {shape}")
            outputs[decl.name] = value.astype(NUMPY_DTYPES[decl.dtype])
    return outputs

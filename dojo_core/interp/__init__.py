"""The reference interpreter: runs any valid Dojo IR program with numpy (DESIGN.md section 5).

API
    run(program, inputs, vectorize=True) -> {name: array}   every out and inout array
    numpy_dtype(dtype) -> np.dtype
    array_shape(program, decl_or_dims) -> tuple[int, ...]
    eval_int(expr, env) -> int

Guarantees of ``run``
* It runs the program at ``program.size_values``. ``inputs`` must hold every ``in`` and
  ``inout`` array, as numpy arrays of exactly the declared shape and numpy dtype (scalars
  may also be Python numbers, cast to the declared dtype); anything else (a missing or
  unknown name, an ``out``/``temp`` name, a wrong shape or dtype) raises ValueError naming
  the array. ``inputs`` are never modified; the returned arrays are fresh (``inout`` arrays
  are copies of the given values, updated).
* ``vectorize=False`` executes every loop as a Python loop, statement by statement; the
  default executes the same program faster and gives bit-identical results (see below;
  numpy computes a function the same way for one element or for many).

Semantics
* ``for i in lo..hi`` runs i = lo, lo+1, ..., hi-1 in order (nothing when hi <= lo); bounds
  and indices are integers, ``//`` floors, ``%`` takes the sign of the divisor (Python).
* ``local`` buffers are (re)created each time their declaration is executed, i.e. at each
  entry of their block. ``local``, ``temp`` and ``out`` buffers start "uninitialised": NaN
  for floats, the most negative integer for integer dtypes, so reads before writes show.
* A statement ``X[f] op= e`` computes ``e`` in the numpy dtype of X: integer
  sub-expressions of iterators, sizes and integer constants (``(i + 1) // 2``) are computed
  exactly, then converted; every other leaf (array element, constant) is converted to X's
  dtype (a float constant in an integer context stays float64), then ordinary numpy
  promotion applies. ``/`` is true division,
  except between two integers, where it truncates toward zero (as in C); ``//`` and ``%``
  are numpy floor division and modulo; comparisons give booleans for ``select(c, a, b)``;
  exp log sqrt tanh erf rsqrt (= 1/sqrt) of an integer are computed in float64; pow of two
  integers is float64 (like C's pow); max/min propagate NaN. ``X op= e`` stores
  ``X[f] op e`` (numpy add, multiply, maximum, minimum), cast to X's dtype.
* f16 is numpy float16 (every operation rounds to f16). bf16 has no numpy dtype: bf16 arrays
  are float32 arrays holding bfloat16 values; bf16 inputs are rounded on entry, arithmetic
  happens in float32 and every store into a bf16 array rounds to bfloat16 (nearest even).
* i8 is numpy int8, promoted as in C (integer promotion): a statement into an i8 array
  computes in int32 (its context dtype is int32, not int8), and i8 elements read are
  converted to the context dtype (int32 for i8 and i32 targets, int64 for i64 ones) before
  any arithmetic, so ``C[i, j] += A[i, k] * B[k, j]`` with A, B i8 and C i32 is exact
  (numpy alone would multiply in int8 and overflow). A store into an i8 array wraps modulo
  256 (two's complement, numpy's ``astype(int8)`` and C's conversion to ``int8_t``):
  300 is stored as 44, -129 as 127.
* Floating point errors (overflow, division by zero, invalid) give inf/NaN silently.

Speed: the program is translated once (cached per program and flag) to Python source
(``interp.codegen``, ``interp.exprs``) in which some loop nests become whole-array numpy
operations. The vectorisation rule (sound by construction; ``vectorize=False`` and random
programs check it bit for bit):
1. Candidates are *regions*: a perfect loop nest L1..Lk (each body exactly one loop) whose
   innermost body holds assignments S1..Sm and possibly ``local`` declarations (no loops).
   Such locals live for one iteration: the region gives each point its own copy.
2. Statically: every other array X written in the region is touched (written, read,
   reduced) through one single index tuple f_X (syntactic equality). Otherwise the region
   runs as Python loops.
3. The iteration set of Lj..Lk (bounds may use min/max, //, % and enclosing iterators) is
   enumerated in sequential order into index arrays. The region is executed statement by
   statement over all its points when, for every written X, either
   (a) f_X is injective over the points (proved when the affine index components have full
       rank in the region iterators, else checked on the actual index values) - then each
       point touches its own elements of X, points are independent and any order,
       statement-wise included, gives the sequential result; stores are elementwise; or
   (b) X is touched by one reduction ``X[f] op= e`` only, with e not reading X, X not bf16
       and e of X's dtype - then ``np.add/multiply/maximum/minimum.at`` applies the updates
       in sequential order (duplicates included), which is exactly the sequential result.
   Else L1 runs as a Python loop around the region L2..Lk, tried again (down to scalar
   statements). Also run as loops: sets of fewer than 16 points (cheaper so) and sets of
   more than 2**22 points (memory). Sets that depend on the sizes only are built once per
   compiled kernel, the others are remembered per value of the iterators they depend on.
Everything else (loops whose body holds a loop beside other statements, scalars written
in a loop, recurrences) runs as Python loops, inner regions vectorised.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import runtime as rt
from .. import ir
from .codegen import TranslationError, generate, numpy_dtype
from .evaluate import eval_int

__all__ = ["run", "numpy_dtype", "array_shape", "eval_int", "source", "TranslationError"]


def array_shape(program: ir.Program, decl_or_dims) -> tuple:
    """The shape of an ArrayDecl, a Local, or a tuple of dims, at the program's sizes."""
    dims = getattr(decl_or_dims, "dims", decl_or_dims)
    env = program.size_values
    return tuple(eval_int(d, env) for d in dims)


@lru_cache(maxsize=128)
def _compile(program: ir.Program, vectorize: bool):
    text, namespace = generate(program, vectorize)
    code = compile(text, f"<dojo interp {program.name}>", "exec")
    exec(code, namespace)
    return namespace["kernel"], text


def source(program: ir.Program, vectorize: bool = True) -> str:
    """The generated Python source (for debugging and tests)."""
    return _compile(program, vectorize)[1]


def _input(decl, value, shape, dtype):
    what = f"{decl.kind} array {decl.name!r} ({decl.dtype}{list(shape) if shape else ''})"
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        if shape != ():
            raise ValueError(f"{what}: got a Python number, expected an array of shape {shape}")
        if dtype.kind == "i" and not float(value).is_integer():
            raise ValueError(f"{what}: {value!r} is not an integer")
        try:
            return np.array(value, dtype=dtype)
        except OverflowError as exc:
            raise ValueError(f"{what}: {value!r} does not fit") from exc
    if not isinstance(value, (np.ndarray, np.generic)):
        raise ValueError(f"{what}: expected a numpy array, got {type(value).__name__}")
    value = np.asarray(value)
    if value.shape != shape:
        raise ValueError(f"{what}: shape {value.shape}, expected {shape}")
    if value.dtype != dtype:
        raise ValueError(f"{what}: dtype {value.dtype}, expected {dtype}")
    return value


def run(program: ir.Program, inputs: dict, vectorize: bool = True) -> dict:
    """Run a valid program (see the module docstring); returns every out and inout array."""
    kernel, _ = _compile(program, bool(vectorize))
    declared = {d.name: d for d in program.arrays}
    for name in inputs:
        if name not in declared:
            raise ValueError(f"unknown input {name!r}: kernel {program.name} declares "
                             f"{sorted(declared)}")
        if declared[name].kind not in ("in", "inout"):
            raise ValueError(f"{name!r} is declared {declared[name].kind}: only in and inout "
                             f"arrays are inputs")
    args, results = [], {}
    for decl in program.arrays:
        shape, dtype = array_shape(program, decl), numpy_dtype(decl.dtype)
        if decl.kind in ("in", "inout"):
            if decl.name not in inputs:
                raise ValueError(f"missing input {decl.name!r} ({decl.kind} {decl.dtype})")
            value = _input(decl, inputs[decl.name], shape, dtype)
            if decl.dtype == "bf16":
                value = np.asarray(rt.round_bf16(value), dtype=dtype).reshape(shape)
            if decl.kind == "inout":
                value = np.array(value, dtype=dtype, order="C", copy=True)
            else:
                value = np.asarray(value).view()
                value.flags.writeable = False
        else:
            value = rt.alloc(shape, dtype)
        args.append(value)
        if decl.kind in ("out", "inout"):
            results[decl.name] = value
    with np.errstate(all="ignore"):
        kernel(*args)
    return results

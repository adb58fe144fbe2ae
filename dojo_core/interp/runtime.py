"""Numeric helpers of the reference interpreter (pure numpy; see ``dojo_core.interp``).

Guarantees:

* ``round_bf16(x)`` rounds float32 values to the nearest bfloat16 value (round to nearest,
  ties to even, on the float32 bit pattern); infinities stay infinite, NaN stays NaN, finite
  values past the bfloat16 range round to infinity. The result is float32.
* ``erf(x)`` is vectorised and, computed in float64, within 1e-15 (absolute) of the exact
  function (a positive-term series for |x| < 2.5, a continued fraction of erfc beyond);
  float inputs keep their dtype, integer inputs give float64. It returns a numpy scalar for
  a scalar argument, so that scalar and vectorised execution agree bit for bit.
* ``wrap_i8(x)`` converts integer values to int8 modulo 256 (two's complement), as a store
  into an i8 array does; an array stays an array, a scalar gives a numpy int8 scalar.
* ``expand``, ``flat``, ``injective`` build and inspect the iteration sets of vectorised
  regions: points are enumerated in the sequential (lexicographic) order of the loop nest.
"""
from __future__ import annotations

import math

import numpy as np

_SERIES_TERMS = 64
_CF_DEPTH = 70
_SERIES_LIMIT = 2.5
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ONE_OVER_SQRT_PI = 1.0 / math.sqrt(math.pi)


def _erf64(x: np.ndarray) -> np.ndarray:
    """erf in float64 of a float64 array."""
    a = np.abs(x)
    out = np.empty_like(a)
    small = a < _SERIES_LIMIT
    if small.any():
        # erf(a) = 2/sqrt(pi) exp(-a^2) sum_n a^(2n+1) 2^n / (2n+1)!!  (all terms positive)
        s = a[small]
        x2 = s * s
        term = s.copy()
        total = s.copy()
        for n in range(1, _SERIES_TERMS):
            term = term * (2.0 * x2 / (2 * n + 1))
            total += term
        out[small] = _TWO_OVER_SQRT_PI * np.exp(-x2) * total
    large = ~small
    if large.any():
        # erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...))))
        b = a[large]
        with np.errstate(all="ignore"):
            t = b.copy()
            for n in range(_CF_DEPTH, 0, -1):
                t = b + (0.5 * n) / t
            tail = np.exp(-b * b) * _ONE_OVER_SQRT_PI / t
        out[large] = 1.0 - np.where(np.isfinite(b), tail, 0.0)
    out = np.where(np.isnan(x), x, out)
    return np.copysign(out, x)


def _erf_scalar(x: float) -> float:
    """_erf64 for one value, with the same floating point operations in the same order
    (the series stops once its terms can no longer change the sum), so bit-identical."""
    a = abs(x)
    if x != x:
        return x
    if a < _SERIES_LIMIT:
        x2 = a * a
        term = total = a
        for n in range(1, _SERIES_TERMS):
            term = term * (2.0 * x2 / (2 * n + 1))
            if n > x2 and term < total * 2.0 ** -60:
                break
            total += term
        out = _TWO_OVER_SQRT_PI * float(np.exp(-x2)) * total
    elif a == math.inf:
        out = 1.0
    else:
        t = a
        for n in range(_CF_DEPTH, 0, -1):
            t = a + (0.5 * n) / t
        out = 1.0 - float(np.exp(-a * a)) * _ONE_OVER_SQRT_PI / t
    return math.copysign(out, x)


def erf(x):
    """The error function, elementwise (see the module docstring)."""
    arr = np.asarray(x)
    if arr.ndim == 0:
        dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
        return dtype.type(_erf_scalar(float(arr)))
    dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
    result = _erf64(arr.astype(np.float64).reshape(-1)).reshape(arr.shape).astype(dtype)
    return result[()] if result.ndim == 0 else result


def rsqrt(x):
    """1 / sqrt(x) in the dtype of x."""
    return 1 / np.sqrt(x)


def tdiv(a, b):
    """Integer division truncating toward zero (C semantics); division by zero gives 0."""
    q = a // b
    fix = (q < 0) & (q * b != a)
    return q + fix


def round_bf16(x):
    """Round to bfloat16 precision (see the module docstring); float32 result."""
    arr = np.array(x, dtype=np.float32, copy=True)
    bits = arr.reshape(-1).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    nan = np.isnan(arr.reshape(-1))
    bits[...] = np.where(nan, bits, rounded)
    return arr[()] if arr.ndim == 0 else arr


def cast(x, dtype):
    """x converted to dtype, array or numpy scalar alike."""
    if isinstance(x, np.ndarray):
        return x.astype(dtype)
    return dtype.type(x)


def wrap_i8(x):
    """x stored into an i8 array: wrapped modulo 256 (two's complement), array or scalar."""
    if isinstance(x, np.ndarray):
        return x.astype(np.int8)
    return np.asarray(x).astype(np.int8)[()]


def alloc(shape, dtype) -> np.ndarray:
    """An 'uninitialised' buffer: NaN for floats, the most negative value for integers,
    so that reads before writes are visible and runs are reproducible."""
    dtype = np.dtype(dtype)
    fill = np.nan if dtype.kind == "f" else np.iinfo(dtype).min
    return np.full(tuple(int(d) for d in shape), fill, dtype=dtype)


_EMPTY = np.zeros(0, dtype=np.int64)


MAX_POINTS = 1 << 22


def expand(iters: tuple, count: int, lo, hi):
    """Add one loop level ``lo..hi`` under the ``count`` points given by ``iters`` (one
    int64 array per enclosing region iterator; lo and hi scalars or per-point arrays).
    Returns (iters + (new,), new_count), points in lexicographic order, or (None, count)
    when there would be more than MAX_POINTS points."""
    if not isinstance(lo, np.ndarray) and not isinstance(hi, np.ndarray):
        n = max(int(hi) - int(lo), 0)           # a rectangular level
        if count * n > MAX_POINTS:
            return None, count * n
        new = np.tile(np.arange(lo, hi, dtype=np.int64), count)
        return tuple(np.repeat(it, n) for it in iters) + (new,), count * n
    lo = np.broadcast_to(np.asarray(lo, dtype=np.int64), (count,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.int64), (count,))
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    if total > MAX_POINTS:
        return None, total
    if total == 0:
        return tuple(_EMPTY for _ in iters) + (_EMPTY,), 0
    owner = np.repeat(np.arange(count), counts)
    start = np.cumsum(counts) - counts
    new = lo[owner] + (np.arange(total, dtype=np.int64) - start[owner])
    return tuple(it[owner] for it in iters) + (new,), total


def flat(count: int, index) -> np.ndarray:
    """A flat element index (scalar or per-point array) as an int64 array of ``count``."""
    return np.broadcast_to(np.asarray(index, dtype=np.int64), (count,))


def injective(index: np.ndarray) -> bool:
    """True when no flat index occurs twice."""
    if index.size < 2:
        return True
    s = np.sort(index)
    return not bool(np.any(s[1:] == s[:-1]))

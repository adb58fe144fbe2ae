"""The library's C test program: every function against stored reference outputs.

Inputs are not stored: both sides generate them with the same deterministic generator
(``fill_values``: splitmix64 of the array's seed and the element index, mapped to the
kernel's input range in double precision, then rounded once to the dtype), so the C program
and numpy see bit-identical inputs at any size.  The reference outputs
(``dojo_core.kernels.reference``, numpy in float64, cast to the declared dtype) are stored as
at most ``SAMPLES`` evenly spaced elements per output array plus the array's largest finite
magnitude, which sets the absolute part of the tolerance (the harness's per-dtype rule:
``|got - want| <= rtol |want| + atol max|want|``; NaN and inf must match).  The program
prints one ``ok NAME`` or ``FAIL NAME: ...`` line per function and exits with the number of
failed functions (0: all passed).
"""
from __future__ import annotations

import math

import numpy as np

from ..harness import TOLERANCE
from ..kernels import NUMPY_DTYPES, array_shape, info, reference
from ..kernels.catalog import DEFAULT_RANGE

SAMPLES = 512
_GOLDEN = 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_MASK = (1 << 64) - 1
_CTYPES = {"f32": "float", "f64": "double"}


def fill_values(count: int, seed: int, low: float, high: float, dtype) -> np.ndarray:
    """``count`` values of the generator the C test program uses (see the module docstring)."""
    with np.errstate(over="ignore"):
        i = np.arange(1, count + 1, dtype=np.uint64)
        z = (np.uint64((seed << 32) & _MASK) + i) * np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return (low + (high - low) * u).astype(dtype)


def test_inputs(program, kernel: str) -> dict:
    """The deterministic inputs of every in/inout array (seed = 1 + declaration index)."""
    entry = info(kernel)
    out = {}
    for index, decl in enumerate(program.arrays):
        if decl.kind not in ("in", "inout"):
            continue
        shape = array_shape(program, decl)
        low, high = entry.range_of(decl.name) if entry else DEFAULT_RANGE
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        out[decl.name] = fill_values(count, index + 1, low, high, NUMPY_DTYPES[decl.dtype]).reshape(shape)
    return out


def reference_outputs(program, kernel: str) -> dict:
    """The numpy reference outputs on the test inputs."""
    return reference(kernel, test_inputs(program, kernel), program=program)


def expected_samples(program, kernel: str, want=None) -> dict:
    """{output name: (indices, values, scale)} of the reference outputs (``want``, when
    already computed by reference_outputs)."""
    if want is None:
        want = reference_outputs(program, kernel)
    samples = {}
    for name, value in want.items():
        flat = np.asarray(value, dtype=np.float64).reshape(-1)
        n = flat.size
        k = min(n, SAMPLES)
        idx = sorted({(j * n) // k for j in range(k)} | {n - 1})
        finite = flat[np.isfinite(flat)]
        scale = float(np.max(np.abs(finite))) if finite.size else 0.0
        samples[name] = (idx, [float(flat[i]) for i in idx], scale or 1.0)
    return samples


def _c_double(x: float) -> str:
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    return repr(x)


_PRELUDE = r"""/* PerfDojo library test: every function against stored reference outputs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "perfdojo.h"

static void *test_alloc(size_t bytes)
{
  void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!p) { fprintf(stderr, "out of memory\n"); exit(255); }
  return p;
}

static double test_uniform(uint64_t seed, uint64_t i, double low, double high)
{
  uint64_t z = ((seed << 32) + i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return low + (high - low) * ((double)(z >> 11) * (1.0 / 9007199254740992.0));
}

#define TEST_FILL(T) \
static void fill_##T(T *x, int64_t n, uint64_t seed, double low, double high) \
{ for (int64_t i = 0; i < n; ++i) x[i] = (T)test_uniform(seed, (uint64_t)i, low, high); }
TEST_FILL(float)
TEST_FILL(double)

#define TEST_CHECK(T) \
static int check_##T(const char *fn, const char *name, const T *got, const int64_t *idx, \
                     const double *want, int64_t count, double scale, double rtol, double atol) \
{ \
  double worst = 0; int64_t at = 0; \
  for (int64_t k = 0; k < count; ++k) { \
    double g = (double)got[idx[k]], w = want[k]; \
    if (isnan(w) || isinf(w)) { \
      if (!(isnan(w) ? isnan(g) : g == w)) { worst = INFINITY; at = k; break; } \
      continue; \
    } \
    double allowed = rtol * fabs(w) + atol * scale; \
    double err = isfinite(g) ? fabs(g - w) : INFINITY; \
    double ratio = allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0); \
    if (!(ratio <= worst)) { worst = ratio; at = k; } \
  } \
  if (worst <= 1.0) return 0; \
  printf("FAIL %s: %s[%lld] = %.9g, expected %.9g (error %.3g x the tolerance)\n", fn, name, \
         (long long)idx[at], (double)got[idx[at]], want[at], worst); \
  return 1; \
}
TEST_CHECK(float)
TEST_CHECK(double)
"""


def c_test_program(functions) -> str:
    """The C source of the test program for the library's functions (FunctionSpec list)."""
    parts = [_PRELUDE]
    calls = []
    for fn in functions:
        parts.append(_test_function(fn))
        calls.append(f"  failed += test_{fn.name}();")
    parts.append("int main(void)\n{\n  int failed = 0;\n" + "\n".join(calls) +
                 f'\n  printf("%d of {len(functions)} functions failed\\n", failed);\n'
                 "  return failed;\n}\n")
    return "\n".join(parts)


def _test_function(fn) -> str:
    program, entry = fn.root, info(fn.kernel)
    samples = expected_samples(program, fn.kernel, getattr(fn, "reference", None))
    lines = [f"static int test_{fn.name}(void)", "{", "  int bad = 0;"]
    args = []
    for index, decl in enumerate(program.arrays):
        if decl.kind == "temp":
            continue
        ctype = _CTYPES[decl.dtype]
        shape = array_shape(program, decl)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        var = f"a_{decl.name}"
        lines.append(f"  {ctype} *{var} = test_alloc({count} * sizeof({ctype}));")
        if decl.kind in ("in", "inout"):
            low, high = entry.range_of(decl.name)
            lines.append(f"  fill_{ctype}({var}, {count}, {index + 1}, {low!r}, {high!r});")
        else:
            lines.append(f"  for (int64_t i = 0; i < {count}; ++i) {var}[i] = NAN;")
        args.append(var)
    lines.append(f"  {fn.name}({', '.join(args)});")
    for decl in program.arrays:
        if decl.name not in samples:
            continue
        idx, want, scale = samples[decl.name]
        rtol, atol = TOLERANCE[decl.dtype]
        ctype = _CTYPES[decl.dtype]
        lines.append(f"  static const int64_t idx_{decl.name}[] = {{{', '.join(map(str, idx))}}};")
        lines.append(f"  static const double want_{decl.name}[] = {{{', '.join(map(_c_double, want))}}};")
        lines.append(f'  bad |= check_{ctype}("{fn.name}", "{decl.name}", a_{decl.name}, idx_{decl.name}, '
                     f"want_{decl.name}, {len(idx)}, {scale!r}, {rtol!r}, {atol!r});")
    lines += [f"  free({a});" for a in args]
    lines.append(f'  if (!bad) printf("ok {fn.name}\\n");')
    lines += ["  return bad;", "}", ""]
    return "\n".join(lines)

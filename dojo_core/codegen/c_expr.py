"""Scalar C expressions for the C generator: names, types, literals, helpers.

The semantics are those of the reference interpreter (``dojo_core.interp``):

* A statement ``X[f] op= e`` computes ``e`` in the *context type* of X (its dtype; bf16 is
  computed as f32 and rounded on store). Array elements read are converted to it; integer
  expressions of iterators, sizes and integer constants are computed exactly in int64 and
  then converted; float constants are constants of the context type (in an integer context
  they stay double). Mixed types then follow numpy's promotion (``promote``).
* ``/`` between integers truncates toward zero (C), ``//`` and ``%`` floor (Python, the sign
  of the divisor), integer division by zero gives 0; ``max``/``min`` propagate NaN (numpy
  ``maximum``/``minimum``, not C's ``fmaxf``, which drops NaN and does not vectorize without
  ``-ffinite-math-only``); ``rsqrt(x)`` is ``1/sqrt(x)``; functions of integers are computed
  in double; f16 (``_Float16``) rounds after every operation, as numpy's float16 does.
* i8 (``int8_t``) is promoted: its context type is i32 and its elements are read as i32
  (C's integer promotion), so arithmetic on i8 values never overflows int8; a store into an
  i8 array converts to ``int8_t``, which gcc defines as reduction modulo 256 (two's
  complement wrap-around, numpy's ``astype(int8)``).

Helpers (``dojo_*`` inline functions) are emitted only when used (``Helpers``), in a fixed
order, so the generated text is deterministic and as short as the program allows.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..poly import const_value
from .expr_base import HelperSet, IndexLowering, float_helpers
from .scalar import (ADD, INTS, MUL, PRIMARY, UNARY, context_type, int_tree, paren, promote,
                     safe_names)

CTYPES = {"f32": "float", "f64": "double", "f16": "_Float16", "bf16": "float",
          "i32": "int32_t", "i64": "int64_t", "i8": "int8_t", "bool": "int"}
ITEMSIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 4, "i32": 4, "i64": 8, "i8": 1}
NUMPY = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32,
         "i64": np.int64, "i8": np.int8}
FLOATS = ("f16", "f32", "f64")

C_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic
_Generic _Noreturn _Static_assert _Thread_local _Float16 asm typeof bool true false
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t size_t
ptrdiff_t INT64_C INT64_MIN INFINITY NAN NULL EOF memcpy memset malloc free aligned_alloc abs
exp expf log logf sqrt sqrtf tanh tanhf erf erff fabs fabsf pow powf fmod fmodf floor floorf
copysign copysignf clock_gettime timespec omp_set_num_threads main errno
""".split())


def literal(value, t: str):
    """(code, prec) of a constant of type t."""
    if t in INTS or t == "bool":
        v = int(value)
        if -2**31 <= v < 2**31:
            return str(v), (UNARY if v < 0 else PRIMARY)
        if v == -2**63:                     # 9223372036854775808 is no int64_t literal
            return "INT64_MIN", PRIMARY
        return f"INT64_C({v})", PRIMARY
    v = NUMPY[t](value)
    if np.isinf(v):
        text = "INFINITY" if v > 0 else "-INFINITY"
        if t == "f64":
            text = "(double)INFINITY" if v > 0 else "-(double)INFINITY"
        return text, (PRIMARY if v > 0 and t != "f64" else UNARY)
    text = str(v) if t != "f64" else repr(float(v))
    if "." not in text and "e" not in text and "inf" not in text:
        text += ".0"
    text += {"f32": "f", "f16": "f16", "f64": ""}[t]
    return text, (UNARY if text.startswith("-") else PRIMARY)


# --------------------------------------------------------------------------- helpers

HELPER_TEXT = {
    "min": "static inline int64_t dojo_min(int64_t a, int64_t b) { return a < b ? a : b; }",
    "max": "static inline int64_t dojo_max(int64_t a, int64_t b) { return a > b ? a : b; }",
    "floordiv": """/* Python floor division and modulo (the sign of the divisor); 0 for a zero divisor */
static inline int64_t dojo_floordiv(int64_t a, int64_t b)
{
  if (b == 0) return 0;
  return a / b - ((a % b != 0) & ((a < 0) != (b < 0)));
}""",
    "mod": """static inline int64_t dojo_mod(int64_t a, int64_t b)
{
  if (b == 0) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}""",
    "div": """/* C integer division (toward zero); 0 for a zero divisor */
static inline int64_t dojo_div(int64_t a, int64_t b) { return b == 0 ? 0 : (b == -1 ? -a : a / b); }""",
    "abs": "static inline int64_t dojo_abs(int64_t a) { return a < 0 ? -a : a; }",
    "round_bf16": """/* round a float to bfloat16 precision (nearest, ties to even); NaN and inf stay */
static inline float dojo_round_bf16(float x)
{
  uint32_t u;
  if (x != x) return x;
  __builtin_memcpy(&u, &x, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  __builtin_memcpy(&x, &u, 4);
  return x;
}""",
}
HELPER_TEXT.update(float_helpers(
    (("f32", "float", "f"), ("f64", "double", ""), ("f16", "_Float16", "f")),
    "static inline", notes=False, suffixed_half=False))


class Helpers(HelperSet):
    """The set of helpers (and extra text) a translation unit uses."""

    HELPER_TEXT = HELPER_TEXT

    def __init__(self):
        super().__init__()
        self.extra = {}          # key -> text, emitted after the helpers, in key order

    def add(self, key: str, text: str) -> None:
        self.extra.setdefault(key, text)

    def text(self) -> list:
        return super().text() + [self.extra[k] for k in sorted(self.extra)]


# --------------------------------------------------------------------------- names

def c_names(program: ir.Program) -> dict:
    """IR name -> C identifier (``scalar.safe_names`` with C's reserved names)."""
    return safe_names(program, C_RESERVED)


# --------------------------------------------------------------------------- expressions

class Buffer:
    """An array, local or scalar as the generated C sees it."""

    wide = False                          # C indexes every array in int64

    def __init__(self, name: str, cname: str, dtype: str, dims: tuple, scalar_var: bool):
        self.name, self.cname, self.dtype, self.dims = name, cname, dtype, dims
        self.scalar_var = scalar_var      # a plain C variable (scalar local)

    @property
    def ctype(self) -> str:
        return CTYPES[self.dtype]


class ExprGen(IndexLowering):
    """C text of index and value expressions for one program (see the module docstring);
    indices are int64."""

    CTYPES, FLOATS = CTYPES, FLOATS
    COMPACT_PRODUCTS = True
    literal = staticmethod(literal)

    def plain_division(self, expr) -> bool:
        """Sizes only, non-negative: C's division and remainder are Python's here."""
        a, b = const_value(expr.lhs, self.sizes), const_value(expr.rhs, self.sizes)
        return a is not None and b is not None and a >= 0 and b > 0

    def direct_lvalue(self, buf, acc):
        return buf.cname if buf.scalar_var else None

    # ------------------------------------------------------------------ values
    # (ValueLowering: value, binop, call; these are its C hooks)

    def int_value(self, expr):
        code, p = self.index(expr)
        return code, p, "i64"

    def buffer(self, name, node):
        return self.buffers[name]

    def int_helper(self, name):
        return self.helper(name)

    def rounded(self, code, prec, t):
        """f16 arithmetic rounds after every operation (C computes _Float16 in float)."""
        if t == "f16":
            return f"(_Float16)({code})", t, UNARY
        return code, t, prec

    def error(self, message, node):
        return ValueError(message)


__all__ = ["CTYPES", "ITEMSIZE", "ExprGen", "Buffer", "Helpers", "c_names", "context_type",
           "promote", "literal", "int_tree", "paren"]

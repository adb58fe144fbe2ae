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
from .scalar import (ADD, BIN_PREC, INTS, MUL, PRIMARY, UNARY, ValueLowering, context_type,
                     int_tree, paren, promote, safe_names)

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
ptrdiff_t INT64_C INFINITY NAN NULL EOF memcpy memset malloc free aligned_alloc abs
exp expf log logf sqrt sqrtf tanh tanhf erf erff fabs fabsf pow powf fmod fmodf floor floorf
copysign copysignf clock_gettime timespec omp_set_num_threads main errno
""".split())








def literal(value, t: str):
    """(code, prec) of a constant of type t."""
    if t in INTS or t == "bool":
        v = int(value)
        if -2**31 <= v < 2**31:
            return str(v), (UNARY if v < 0 else PRIMARY)
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

_FLOAT_HELPERS = {
    "max": "static inline {T} dojo_max_{t}({T} a, {T} b) {{ return (a > b || a != a) ? a : b; }}",
    "min": "static inline {T} dojo_min_{t}({T} a, {T} b) {{ return (a < b || a != a) ? a : b; }}",
    "fmod": """static inline {T} dojo_mod_{t}({T} a, {T} b)
{{
  {T} r = {fmod}(a, b);
  if (b == 0) return r;
  if (r != 0) return ((r < 0) != (b < 0)) ? r + b : r;
  return {copysign}(0, b);
}}""",
    "ffloordiv": """static inline {T} dojo_floordiv_{t}({T} a, {T} b)
{{
  {T} m = {fmod}(a, b), d, f;
  if (b == 0) return a / b;
  d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
  if (d == 0) return {copysign}(0, a / b);
  f = {floor}(d);
  return (d - f > 0.5) ? f + 1 : f;
}}""",
}

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
for _t, _T, _sfx in (("f32", "float", "f"), ("f64", "double", ""), ("f16", "_Float16", "f")):
    for _k, _tmpl in _FLOAT_HELPERS.items():
        _ct = "float" if _t == "f16" else _T
        HELPER_TEXT[f"{_k}_{_t}"] = _tmpl.format(
            T=_T, t=_t, fmod=f"fmod{_sfx}", copysign=f"copysign{_sfx}", floor=f"floor{_sfx}")
HELPER_ORDER = list(HELPER_TEXT)


class Helpers:
    """The set of helpers (and extra text) a translation unit uses."""

    def __init__(self):
        self.used = set()
        self.extra = {}          # key -> text, emitted after the helpers, in key order

    def use(self, name: str) -> None:
        if name not in HELPER_TEXT:
            raise KeyError(name)
        self.used.add(name)

    def add(self, key: str, text: str) -> None:
        self.extra.setdefault(key, text)

    def text(self) -> list:
        out = [HELPER_TEXT[n] for n in HELPER_ORDER if n in self.used]
        out += [self.extra[k] for k in sorted(self.extra)]
        return out


# --------------------------------------------------------------------------- names

def c_names(program: ir.Program) -> dict:
    """IR name -> C identifier (``scalar.safe_names`` with C's reserved names)."""
    return safe_names(program, C_RESERVED)


# --------------------------------------------------------------------------- expressions

class Buffer:
    """An array, local or scalar as the generated C sees it."""

    def __init__(self, name: str, cname: str, dtype: str, dims: tuple, scalar_var: bool):
        self.name, self.cname, self.dtype, self.dims = name, cname, dtype, dims
        self.scalar_var = scalar_var      # a plain C variable (scalar local)

    @property
    def ctype(self) -> str:
        return CTYPES[self.dtype]


class ExprGen(ValueLowering):
    """C text of index and value expressions for one program (see the module docstring)."""

    CTYPES, FLOATS = CTYPES, FLOATS

    def __init__(self, program: ir.Program, names: dict, helpers: Helpers):
        self.program = program
        self.sizes = program.size_values
        self.names = names
        self.helpers = helpers
        self.buffers = {}

    # ------------------------------------------------------------------ indices (int64)

    def index(self, expr):
        """(code, prec) of an integer index or bound expression."""
        if isinstance(expr, ir.Const):
            return literal(int(expr.value), "i64")
        if isinstance(expr, ir.Var):
            return self.names.get(expr.name, expr.name), PRIMARY
        if isinstance(expr, ir.Neg):
            code, p = self.index(expr.operand)
            return f"-{paren(code, p, UNARY + 1)}", UNARY
        if isinstance(expr, ir.BinOp) and expr.op in ("+", "-", "*"):
            p = BIN_PREC[expr.op]
            (lc, lp), (rc, rp) = self.index(expr.lhs), self.index(expr.rhs)
            lc, rc = paren(lc, lp, p), paren(rc, rp, p + 1)
            if expr.op == "*" and isinstance(expr.lhs, ir.Const) and expr.lhs.value >= 0 \
                    and isinstance(expr.rhs, ir.Var):
                return f"{lc}*{rc}", p
            return f"{lc} {expr.op} {rc}", p
        if isinstance(expr, ir.BinOp) and expr.op in ("//", "%"):
            a, b = const_value(expr.lhs, self.sizes), const_value(expr.rhs, self.sizes)
            if a is not None and b is not None and a >= 0 and b > 0:
                # sizes only, non-negative: C's division and remainder are Python's here
                (lc, lp), (rc, rp) = self.index(expr.lhs), self.index(expr.rhs)
                op = "/" if expr.op == "//" else "%"
                return f"{paren(lc, lp, MUL)} {op} {paren(rc, rp, MUL + 1)}", MUL
            name = "floordiv" if expr.op == "//" else "mod"
            self.helpers.use(name)
            return f"dojo_{name}({self.index(expr.lhs)[0]}, {self.index(expr.rhs)[0]})", PRIMARY
        if isinstance(expr, ir.Call) and expr.func in ("min", "max") and len(expr.args) == 2:
            self.helpers.use(expr.func)
            a, b = (self.index(x)[0] for x in expr.args)
            return f"dojo_{expr.func}({a}, {b})", PRIMARY
        raise ValueError(f"not an integer index expression: {expr!r}")

    def flat_index(self, buf: Buffer, indices) -> str:
        """Row-major flattened index (Horner form) of an access to buf."""
        code, prec = None, PRIMARY
        for k, e in enumerate(indices):
            ic, ip = self.index(e)
            if code is None:
                code, prec = ic, ip
                continue
            dc, dp = self.dim_code(buf.dims[k])
            code = f"{paren(code, prec, MUL)} * {paren(dc, dp, MUL + 1)} + {paren(ic, ip, ADD)}"
            prec = ADD
        return code if code is not None else "0"

    def dim_code(self, dim):
        """A dimension: a literal for locals (constant), size names for declared arrays."""
        return self.index(dim)

    def lvalue(self, acc: ir.Access) -> str:
        buf = self.buffers[acc.array]
        if buf.scalar_var:
            return buf.cname
        if not acc.indices:
            return f"{buf.cname}[0]"
        return f"{buf.cname}[{self.flat_index(buf, acc.indices)}]"

    # ------------------------------------------------------------------ values
    # (ValueLowering: value, binop, call; these are its C hooks)

    def literal(self, value, t):
        return literal(value, t)

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

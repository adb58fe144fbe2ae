"""Scalar CUDA C++ expressions for the CUDA generator: names, types, literals, helpers.

The value semantics are the reference interpreter's (``dojo_core.interp``), the same as the
C generator's (``c_expr``), written for device code:

* ``X[f] op= e`` computes ``e`` in the *context type* of X (its dtype; bf16 computes as f32
  and rounds to bfloat16, nearest even, on every store). Array elements read are converted
  to it; integer expressions of iterators, sizes and integer constants are computed exactly
  (in ``long long`` when they multiply) and converted; float constants are constants of the
  context type (double in an integer context). Mixed types follow numpy's promotion.
* ``/`` between integers truncates toward zero; ``//`` and ``%`` floor (Python: the sign of
  the divisor); integer division by zero gives 0; ``max``/``min`` propagate NaN (numpy);
  functions of integers are computed in double. ``rsqrt`` is CUDA's ``rsqrtf``/``rsqrt``
  (within 2 ulp of ``1/sqrt``; the interpreter rounds twice), the other functions are the
  CUDA math library's (``expf logf sqrtf tanhf erff``, within their documented ulp bounds).
* i8 (``signed char``) is promoted as in C: its context type is i32 and its elements are
  read as int, so arithmetic on i8 values never overflows int8; a store into an i8 array
  converts to ``signed char``, modulo 256 (two's complement wrap-around, as numpy's
  ``astype(int8)``).
* f16 is refused (``CudaCodegenError``): the generator has no ``__half`` lowering yet.

Indices, bounds and iterators are 32-bit ``int`` (faster on the GPU); an array with more
than 2^31 - 1 elements is indexed in ``long long``. ``//`` and ``%`` in indices become C's
``/`` and ``%`` where the dividend is provably non-negative (split tails and tiles), else
the floor helpers.

Helpers (``dojo_*``, ``__host__ __device__``) are emitted only when used, in a fixed order.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..errors import DojoError
from ..poly import const_value
from .expr_base import HelperSet, IndexLowering, float_helpers
from .scalar import (ADD, INTS, MUL, PRIMARY, UNARY, context_type, int_tree, paren, promote,
                     safe_names)

CTYPES = {"f32": "float", "f64": "double", "bf16": "float", "i32": "int", "i64": "long long",
          "i8": "signed char", "bool": "bool"}
ITEMSIZE = {"f32": 4, "f64": 8, "bf16": 4, "i32": 4, "i64": 8, "i8": 1}
NUMPY = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "i8": np.int8}
FLOATS = ("f32", "f64")
INT32_MAX = 2**31 - 1

RESERVED = frozenset("""
alignas alignof and asm auto bool break case catch char char16_t char32_t class const
constexpr const_cast continue decltype default delete do double dynamic_cast else enum
explicit export extern false float for friend goto if inline int long mutable namespace new
noexcept not nullptr operator or private protected public register reinterpret_cast return
short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void
volatile wchar_t while restrict
threadIdx blockIdx blockDim gridDim warpSize dim3 min max abs exp expf log logf sqrt sqrtf
rsqrt rsqrtf tanh tanhf erf erff fabs fabsf pow powf fmod fmodf floor floorf copysign
copysignf llabs memcpy memset malloc free printf fprintf snprintf fopen fclose fread fwrite
qsort atoi strcmp stderr stdout stdin main argc argv errno size_t int8_t int16_t int32_t int64_t
uint8_t uint16_t uint32_t uint64_t INFINITY NAN NULL EOF FILE assert err
""".split())


class CudaCodegenError(DojoError):
    """The program has no CUDA translation here; located at the offending statement."""

    def __init__(self, message: str, node=None):
        loc = getattr(node, "loc", None)
        super().__init__(message, loc.line if loc else 1, loc.col if loc else 1)


def literal(value, t: str):
    """(code, prec) of a constant of type t."""
    if t in INTS or t == "bool":
        v = int(value)
        if -2**31 < v <= INT32_MAX and t != "i64":
            return str(v), (UNARY if v < 0 else PRIMARY)
        return f"{v}LL", (UNARY if v < 0 else PRIMARY)
    v = NUMPY[t](value)
    if np.isinf(v):
        text = "INFINITY" if t == "f32" else "(double)INFINITY"
        return (text, PRIMARY if t == "f32" else UNARY) if v > 0 else (f"-{text}", UNARY)
    text = str(v) if t == "f32" else repr(float(v))
    if "." not in text and "e" not in text:
        text += ".0"
    if t == "f32":
        text += "f"
    return text, (UNARY if text.startswith("-") else PRIMARY)


def cuda_names(program: ir.Program) -> dict:
    """IR name -> C identifier (``scalar.safe_names`` with C++/CUDA's reserved names and
    builtins)."""
    return safe_names(program, RESERVED)


# --------------------------------------------------------------------------- helpers

_HD = "static __host__ __device__ __forceinline__"
_D = "static __device__ __forceinline__"

HELPER_TEXT = {
    "imin": f"{_HD} int dojo_imin(int a, int b) {{ return a < b ? a : b; }}",
    "imax": f"{_HD} int dojo_imax(int a, int b) {{ return a > b ? a : b; }}",
    "floordiv": f"""/* Python floor division and modulo (the sign of the divisor); 0 for a zero divisor */
{_HD} int dojo_floordiv(int a, int b)
{{
  if (b == 0) return 0;
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}}""",
    "mod": f"""{_HD} int dojo_mod(int a, int b)
{{
  if (b == 0) return 0;
  int r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}}""",
    "min_i64": f"{_HD} long long dojo_min_i64(long long a, long long b) {{ return a < b ? a : b; }}",
    "max_i64": f"{_HD} long long dojo_max_i64(long long a, long long b) {{ return a > b ? a : b; }}",
    "floordiv_i64": f"""{_HD} long long dojo_floordiv_i64(long long a, long long b)
{{
  if (b == 0) return 0;
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}}""",
    "mod_i64": f"""{_HD} long long dojo_mod_i64(long long a, long long b)
{{
  if (b == 0) return 0;
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}}""",
    "div_i64": f"""/* C integer division (toward zero); 0 for a zero divisor */
{_HD} long long dojo_div_i64(long long a, long long b) {{ return b == 0 ? 0 : (b == -1 ? -a : a / b); }}""",
    "abs_i64": f"{_HD} long long dojo_abs_i64(long long a) {{ return a < 0 ? -a : a; }}",
    "round_bf16": f"""/* round a float to bfloat16 precision (nearest, ties to even); NaN and inf stay */
{_HD} float dojo_round_bf16(float x)
{{
  unsigned int u;
  if (x != x) return x;
  memcpy(&u, &x, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  memcpy(&x, &u, 4);
  return x;
}}""",
}
HELPER_TEXT.update(float_helpers((("f32", "float", "f"), ("f64", "double", "")), _D,
                                 notes=True, suffixed_half=True))


class Helpers(HelperSet):
    """The helpers a translation unit uses (emitted in HELPER_TEXT's order)."""

    HELPER_TEXT = HELPER_TEXT


# --------------------------------------------------------------------------- buffers

class Buffer:
    """How device (or host) code reaches an array, local or scalar.

    kind: ``flat`` (a pointer, row-major, ``dims`` are IR dims), ``value`` (an ``in``
    scalar passed by value), ``md`` (a C array ``name[d0][d1]...`` of the dims kept, or a
    plain variable when none is kept)."""

    def __init__(self, name, cname, dtype, dims, kind, keep=None, wide=False):
        self.name, self.cname, self.dtype, self.dims, self.kind = name, cname, dtype, dims, kind
        self.keep = tuple(range(len(dims))) if keep is None else tuple(keep)
        self.wide = wide        # index in long long (more than 2^31 - 1 elements)

    @property
    def ctype(self) -> str:
        return CTYPES[self.dtype]


# --------------------------------------------------------------------------- expressions

class ExprGen(IndexLowering):
    """CUDA text of index and value expressions (see the module docstring)."""

    CTYPES, FLOATS = CTYPES, FLOATS
    INT_DIVISION = INTS + ("bool",)
    NATIVE_RSQRT = True
    INDEX_TYPE = "i32"
    FLAT_TERM_PREC = ADD + 1
    literal = staticmethod(literal)

    def __init__(self, program: ir.Program, names: dict, helpers: Helpers):
        super().__init__(program, names, helpers)
        self.nonneg_iters = set()
        for loop in ir.loops(program):        # textual order: outer loops first
            if self.nonneg(loop.lo):
                self.nonneg_iters.add(loop.iterator)

    # ------------------------------------------------------------------ integers

    def nonneg(self, expr) -> bool:
        """A sufficient proof that an integer expression is never negative."""
        v = const_value(expr, self.sizes)
        if v is not None:
            return v >= 0
        if isinstance(expr, ir.Var):
            return expr.name in self.nonneg_iters
        if isinstance(expr, ir.BinOp):
            if expr.op in ("+", "*"):
                return self.nonneg(expr.lhs) and self.nonneg(expr.rhs)
            if expr.op in ("//", "%"):
                d = const_value(expr.rhs, self.sizes)
                return d is not None and d > 0 and (expr.op == "%" or self.nonneg(expr.lhs))
        if isinstance(expr, ir.Call) and expr.func == "min":
            return all(self.nonneg(a) for a in expr.args)
        if isinstance(expr, ir.Call) and expr.func == "max":
            return any(self.nonneg(a) for a in expr.args)
        return False

    # (IndexLowering: index, flat_index, lvalue; these are its CUDA hooks: indices are int,
    # or long long with ``wide``, so products cannot overflow)

    def index_var(self, name, wide):
        return (f"(long long){name}", UNARY) if wide else (name, PRIMARY)

    def index_helper(self, name, wide):
        if wide:
            return f"{name}_i64"
        return "i" + name if name in ("min", "max") else name

    def plain_division(self, expr) -> bool:
        d = const_value(expr.rhs, self.sizes)
        return d is not None and d > 0 and self.nonneg(expr.lhs)

    def direct_lvalue(self, buf, acc):
        if buf.kind == "value":
            return buf.cname
        if buf.kind == "md":
            return buf.cname + "".join(f"[{self.index(acc.indices[k])[0]}]" for k in buf.keep)
        return None

    # ------------------------------------------------------------------ values
    # (ValueLowering: value, binop, call; these are its CUDA hooks)

    def int_value(self, expr):
        """int arithmetic, or long long where a product could overflow int."""
        wide = any(isinstance(n, ir.BinOp) and n.op == "*" for n in ir.walk_expr(expr))
        code, p = self.index(expr, wide)
        return code, p, "i64" if wide else "i32"

    def buffer(self, name, node):
        buf = self.buffers.get(name)
        if buf is None:
            raise CudaCodegenError(f"'{name}' is not visible here", node)
        return buf

    def int_helper(self, name):
        return self.helper(f"{name}_i64")

    def error(self, message, node):
        return CudaCodegenError(message, node)

    # ------------------------------------------------------------------ statements

    def assign(self, stmt: ir.Assign) -> str:
        """One C statement (without indentation) for an assignment."""
        buf = self.buffers.get(stmt.target.array)
        if buf is None:
            raise CudaCodegenError(f"'{stmt.target.array}' is not visible here", stmt)
        if buf.kind == "value":
            raise CudaCodegenError(f"'{stmt.target.array}' is an input", stmt)
        T = context_type(buf.dtype)
        target = self.lvalue(stmt.target)
        code, t, p = self.value(stmt.value, T)
        op = stmt.op
        if op in ("max=", "min="):
            u = promote(T, t)
            cur, cp = self.cast(target, PRIMARY, T, u)
            code, p = self.cast(code, p, t, u)
            fn = op[:-1]
            if u in INTS:
                self.helpers.use(f"{fn}_i64")
                code, p = f"dojo_{fn}_i64({cur}, {code})", PRIMARY
            else:
                self.helpers.use(f"{fn}_{u}")
                code, p = f"dojo_{fn}_{u}({cur}, {code})", PRIMARY
            op = "="
        if buf.dtype == "bf16":
            if op in ("+=", "*="):
                prec = ADD if op == "+=" else MUL
                code = f"{target} {op[0]} {paren(code, p, prec + 1)}"
            self.helpers.use("round_bf16")
            return f"{target} = dojo_round_bf16({code});"
        return f"{target} {op} {code};"


__all__ = ["CTYPES", "ITEMSIZE", "Buffer", "CudaCodegenError", "ExprGen", "Helpers",
           "context_type", "cuda_names", "int_tree", "literal", "paren", "promote"]

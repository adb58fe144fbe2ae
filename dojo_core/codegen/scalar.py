"""What the C and CUDA expression generators (``c_expr``, ``cuda_expr``) share: C operator
precedences, numpy's type promotion, and the lowering of scalar values -- casts, operators,
``select``, the math functions -- with the interpreter's semantics (see ``c_expr``).

``ValueLowering`` is a mixin; each generator supplies what differs between C and CUDA:

    CTYPES, FLOATS            its type names; the float dtypes it knows
    INT_DIVISION              the types whose / // % go through the integer helpers
    NATIVE_RSQRT              True: rsqrt is the math library's; False: 1 / sqrt
    buffers, helpers          the visible buffers; the used-helper registry
    literal(value, t)         (code, prec) of a constant
    index(expr)               (code, prec) of an integer index expression
    int_value(expr)           (code, prec, type) of a non-constant integer expression
    lvalue(access)            the C lvalue of an access
    buffer(name, node)        the buffer an access reads (or the generator's error)
    int_helper(name)          the C name of an integer helper (div, floordiv, mod, abs,
                              min, max), registered as used
    rounded(code, prec, t)    the value after the rounding type t needs (f16), else as is
    error(message, node)      the exception to raise
"""
from __future__ import annotations

from .. import ir
from ..ir import int_tree
from ..poly import const_value

# C operator precedence levels
PRIMARY, UNARY, MUL, ADD, REL, EQ, AND, COND = 16, 14, 13, 12, 10, 9, 5, 3
BIN_PREC = {"+": ADD, "-": ADD, "*": MUL, "/": MUL, "%": MUL, "<": REL, "<=": REL, ">": REL,
            ">=": REL, "==": EQ, "!=": EQ}
INTS = ("i32", "i64")
FLOAT_ORDER = ("f16", "f32", "f64")
UNARY_FUNCTIONS = ("exp", "log", "sqrt", "tanh", "erf", "rsqrt", "abs")


def safe_names(program: ir.Program, reserved: frozenset) -> dict:
    """IR name -> C identifier: names in ``reserved`` (the language's keywords, the functions
    and macros the generated code uses) or starting with ``dojo_``/``_`` (the generator's own
    names) get a ``_`` suffix, repeated until unique."""
    names = [n for n, _ in program.sizes] + [d.name for d in program.arrays]
    for stmt in ir.walk_stmts(program.body):
        if isinstance(stmt, ir.Loop):
            names.append(stmt.iterator)
        elif isinstance(stmt, ir.Local):
            names.append(stmt.name)
    plain, taken, out = set(names), set(), {}
    for n in names:
        c = n
        if c in reserved or c.startswith(("dojo_", "_")):
            c = n + "_"
            while c in plain or c in taken or c in reserved:
                c += "_"
        out[n] = c
        taken.add(c)
    return out


def context_type(dtype: str) -> str:
    """The type statements into an array of this dtype compute in, and the type an element
    of it is read as (bf16 computes as f32; i8 is promoted to i32, C's integer promotion)."""
    return "f32" if dtype == "bf16" else ir.PROMOTED_DTYPES.get(dtype, dtype)


def promote(a: str, b: str) -> str:
    """numpy's result_type for the types that occur here."""
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    if a in INTS and b in INTS:
        return "i64"
    if a in FLOAT_ORDER and b in FLOAT_ORDER:
        return max(a, b, key=FLOAT_ORDER.index)
    return "f64"          # float and integer: numpy promotes to double


def paren(code: str, prec: int, need: int) -> str:
    return f"({code})" if prec < need else code


class ValueLowering:
    """value(expr, T) -> (code, type, prec): the C text of a value computed in context
    type T (see the module docstring for what a generator supplies)."""

    INT_DIVISION = INTS
    NATIVE_RSQRT = False

    def rounded(self, code, prec, t):
        return code, t, prec

    def helper(self, name: str) -> str:
        self.helpers.use(name)
        return f"dojo_{name}"

    def cast(self, code, prec, src, dst):
        if src == dst or src == "bool":
            return code, prec
        return f"({self.CTYPES[dst]}){paren(code, prec, UNARY)}", UNARY

    def value(self, expr, T: str):
        if int_tree(expr):
            v = const_value(expr, self.sizes)
            if v is not None:
                code, p = self.literal(v, T)
                return code, T, p
            code, p, t = self.int_value(expr)
            code, p = self.cast(code, p, t, T)
            return code, T, p
        if isinstance(expr, ir.BinOp) and expr.op in ir.COMPARE_OPS \
                and int_tree(expr.lhs) and int_tree(expr.rhs):
            prec = BIN_PREC[expr.op]
            (lc, lp), (rc, rp) = self.index(expr.lhs), self.index(expr.rhs)
            return f"{paren(lc, lp, prec)} {expr.op} {paren(rc, rp, prec + 1)}", "bool", prec
        if isinstance(expr, ir.Const):
            t = T if T in self.FLOATS else "f64"
            code, p = self.literal(expr.value, t)
            return code, t, p
        if isinstance(expr, ir.Access):
            buf = self.buffer(expr.array, expr)
            code, p = self.cast(self.lvalue(expr), PRIMARY, context_type(buf.dtype), T)
            return code, T, p
        if isinstance(expr, ir.Neg):
            code, t, p = self.value(expr.operand, T)
            return self.rounded(f"-{paren(code, p, UNARY + 1)}", UNARY, t)
        if isinstance(expr, ir.BinOp):
            return self.binop(expr, T)
        if isinstance(expr, ir.Call):
            return self.call(expr, T)
        raise self.error(f"cannot translate {expr!r}", expr)

    def binop(self, expr, T):
        (lc, lt, lp), (rc, rt, rp) = self.value(expr.lhs, T), self.value(expr.rhs, T)
        t = promote(lt, rt)
        lc, lp = self.cast(lc, lp, lt, t)
        rc, rp = self.cast(rc, rp, rt, t)
        op = expr.op
        if op in ir.COMPARE_OPS:
            prec = BIN_PREC[op]
            return f"{paren(lc, lp, prec)} {op} {paren(rc, rp, prec + 1)}", "bool", prec
        if t in self.INT_DIVISION and op in ("/", "//", "%"):
            fn = self.int_helper({"/": "div", "//": "floordiv", "%": "mod"}[op])
            code, prec = self.cast(f"{fn}({lc}, {rc})", PRIMARY, "i64", t)
            return code, t, prec
        if op in ("//", "%"):
            name = {"//": "ffloordiv", "%": "fmod"}[op]
            self.helpers.use(f"{name}_{t}")
            fn = "floordiv" if op == "//" else "mod"
            return f"dojo_{fn}_{t}({lc}, {rc})", t, PRIMARY
        prec = BIN_PREC[op]
        return self.rounded(f"{paren(lc, lp, prec)} {op} {paren(rc, rp, prec + 1)}", prec, t)

    def call(self, expr, T):
        f = expr.func
        args = [self.value(a, T) for a in expr.args]
        if f == "select":
            (cc, ct, cp), (ac, at, ap), (bc, bt, bp) = args
            if ct != "bool":
                cc, cp = f"{paren(cc, cp, EQ)} != 0", EQ
            t = promote(at, bt)
            ac, ap = self.cast(ac, ap, at, t)
            bc, bp = self.cast(bc, bp, bt, t)
            return (f"{paren(cc, cp, COND + 1)} ? {paren(ac, ap, COND + 1)} : "
                    f"{paren(bc, bp, COND)}"), t, COND
        if f in UNARY_FUNCTIONS:
            return self._unary(f, *args[0])
        if f in ("max", "min", "pow"):
            (ac, at, ap), (bc, bt, bp) = args
            t = promote(at, bt)
            if f == "pow" and t not in self.FLOATS:
                t = "f64"
            ac, ap = self.cast(ac, ap, at, t)
            bc, bp = self.cast(bc, bp, bt, t)
            if f == "pow":
                if t == "f16":
                    return (f"(_Float16)powf((float){paren(ac, ap, UNARY)}, "
                            f"(float){paren(bc, bp, UNARY)})"), t, UNARY
                return f"{'pow' if t == 'f64' else 'powf'}({ac}, {bc})", t, PRIMARY
            if t in INTS or t == "bool":
                code, p = self.cast(f"{self.int_helper(f)}({ac}, {bc})", PRIMARY, "i64", t)
                return code, t, p
            return f"{self.helper(f'{f}_{t}')}({ac}, {bc})", t, PRIMARY
        raise self.error(f"unknown function {f}/{len(args)}", expr)

    def _unary(self, f, code, t, p):
        """exp log sqrt tanh erf rsqrt abs of a value; functions of integers in double,
        f16 through float and rounded back."""
        if f == "abs" and t in INTS + ("bool",):
            code, p = self.cast(f"{self.int_helper('abs')}({code})", PRIMARY, "i64", t)
            return code, t, p
        if t not in self.FLOATS:
            code, p = self.cast(code, p, t, "f64")
            t = "f64"
        reciprocal = f == "rsqrt" and not self.NATIVE_RSQRT
        name = "fabs" if f == "abs" else ("sqrt" if reciprocal else f)
        arg = code if t != "f16" else f"(float){paren(code, p, UNARY)}"
        call = f"{name if t == 'f64' else name + 'f'}({arg})"
        if reciprocal:
            call = f"{'1.0' if t == 'f64' else '1.0f'} / {call}"
            if t == "f16":
                return f"(_Float16)({call})", t, UNARY
            return call, t, MUL
        if t == "f16":
            return f"(_Float16){call}", t, UNARY
        return call, t, PRIMARY

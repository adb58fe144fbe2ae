"""Expressions of the interpreter's code generator: IR index and value expressions to
Python/numpy source (see ``dojo_core.interp`` for the semantics implemented).

``Translator`` is the expression half of ``interp.codegen.Generator``: it owns the namespace
of the generated code (constants ``k_N``, dtype objects ``t_NAME``/``d_NAME``) and turns
index expressions into integer code (Python ints, or int64 arrays inside vectorised
regions) and value expressions into code computing in a context dtype T, with the static
numpy dtype of the result.
"""
from __future__ import annotations

import numpy as np

from . import runtime as rt
from .. import ir
from .evaluate import eval_int
from .regions import uses_vars

BOOL = np.dtype(bool)
F64 = np.dtype(np.float64)


class TranslationError(ValueError):
    """The program cannot be translated (it was not checked, or uses an unknown name).
    Not a DojoError: a checked program always translates, so one reaching a user is a bug."""


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype holding an IR dtype (bf16 is held as float32)."""
    table = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.float32,
             "i32": np.int32, "i64": np.int64, "i8": np.int8}
    if dtype not in table:
        raise ValueError(f"unknown dtype {dtype!r}")
    return np.dtype(table[dtype])


class Array:
    """A declared array or local: IR dtype, numpy dtype and dims as index-code strings."""

    def __init__(self, name, dtype, dims, local=False, private=None):
        self.name, self.dtype, self.np = name, dtype, numpy_dtype(dtype)
        # the dtype statements into it compute in: i8 is promoted to int32 (C's rule)
        self.ctx = numpy_dtype(ir.PROMOTED_DTYPES.get(dtype, dtype))
        self.dims, self.local = dims, local
        self.private = private      # name of the point index when privatised in a region

    @property
    def fixed(self) -> bool:
        """True when every dim is an integer literal (known at translation time)."""
        return all(d.isdigit() for d in self.dims)

    def strides(self):
        if self.fixed:
            sizes = [int(d) for d in self.dims]
            return [str(int(np.prod(sizes[k + 1:], dtype=np.int64))) for k in range(len(sizes))]
        out, acc = [], "1"
        for d in reversed(self.dims):
            out.append(acc)
            acc = d if acc == "1" else f"({d}) * {acc}"
        return out[::-1]


class Translator:
    def __init__(self, program: ir.Program):
        self.program = program
        self.sizes = program.size_values
        self.names = {"np": np, "rt": rt}
        self.consts: dict = {}
        self.lines: list = []
        self.counter = 0

    # ------------------------------------------------------------------ helpers

    def fresh(self) -> int:
        self.counter += 1
        return self.counter

    def emit(self, depth: int, line: str):
        self.lines.append("    " * depth + line)

    def const(self, value, dtype: np.dtype) -> str:
        key = (repr(value), dtype.str)
        if key not in self.consts:
            name = f"k_{len(self.consts)}"
            self.consts[key] = name
            self.names[name] = dtype.type(value)
        return self.consts[key]

    def dtype_name(self, dtype: np.dtype) -> str:
        name = f"t_{dtype.name}"
        self.names[name] = dtype.type
        return name

    def dtype_obj(self, dtype: np.dtype) -> str:
        name = f"d_{dtype.name}"
        self.names[name] = dtype
        return name

    @staticmethod
    def ident(name: str) -> str:
        if not isinstance(name, str) or not name.isidentifier():
            raise TranslationError(f"bad name {name!r}")
        return name

    def array(self, scope, name) -> Array:
        if name not in scope["arrays"]:
            raise TranslationError(f"unknown array {name!r}")
        return scope["arrays"][name]

    # ------------------------------------------------------------------ expressions

    def index(self, expr, scope, vec=frozenset()) -> str:
        """Integer code of an index or bound expression; ``vec`` names array iterators."""
        if isinstance(expr, ir.Const):
            if isinstance(expr.value, bool) or not float(expr.value).is_integer():
                raise TranslationError(f"non-integer constant {expr.value!r} in an index")
            return str(int(expr.value))
        if isinstance(expr, ir.Var):
            if expr.name in scope["iters"]:
                return "v_" + self.ident(expr.name)
            if expr.name in self.sizes:
                return str(int(self.sizes[expr.name]))
            raise TranslationError(f"unknown name {expr.name!r}")
        if isinstance(expr, ir.Neg):
            return f"(-{self.index(expr.operand, scope, vec)})"
        if isinstance(expr, ir.BinOp) and expr.op in ("+", "-", "*", "//", "%"):
            lhs, rhs = self.index(expr.lhs, scope, vec), self.index(expr.rhs, scope, vec)
            return f"({lhs} {expr.op} {rhs})"
        if isinstance(expr, ir.Call) and expr.func in ("min", "max") and len(expr.args) == 2:
            lhs, rhs = (self.index(a, scope, vec) for a in expr.args)
            if uses_vars(expr, vec):
                return f"np.{expr.func}imum({lhs}, {rhs})"
            return f"{expr.func}({lhs}, {rhs})"
        raise TranslationError(f"not an integer expression: {expr!r}")

    def dim(self, expr, scope) -> str:
        """Code of an array dimension: a literal when it depends on the sizes only."""
        try:
            return str(eval_int(expr, self.sizes))
        except ValueError:
            return self.index(expr, scope)

    def subscript(self, access, scope, vec) -> str:
        arr = self.array(scope, access.array)
        if len(access.indices) != len(arr.dims):
            raise TranslationError(f"{access.array} takes {len(arr.dims)} indices")
        subs = [self.index(e, scope, vec) for e in access.indices]
        if arr.private:
            subs.insert(0, arr.private)
        return f"a_{access.array}[{', '.join(subs) or '()'}]"

    def value(self, expr, T: np.dtype, scope, vec=None):
        """(code, static numpy dtype) of a value expression computed in context T;
        ``vec`` is None in scalar code, else the set of array iterators."""
        isvec = vec is not None
        vset = vec or frozenset()
        if ir.int_tree(expr):
            # integer arithmetic of iterators, sizes and integer constants: exact, then T
            if not uses_vars(expr, scope["iters"]):
                return self.const(eval_int(expr, self.sizes), T), T
            code = self.index(expr, scope, vset)
            if uses_vars(expr, vset):
                return f"np.asarray({code}).astype({self.dtype_name(T)})", T
            return f"{self.dtype_name(T)}({code})", T
        if isinstance(expr, ir.BinOp) and expr.op in ir.COMPARE_OPS \
                and ir.int_tree(expr.lhs) and ir.int_tree(expr.rhs):
            lhs, rhs = self.index(expr.lhs, scope, vset), self.index(expr.rhs, scope, vset)
            return f"({lhs} {expr.op} {rhs})", BOOL
        if isinstance(expr, ir.Const):      # a float constant
            v = expr.value
            if T.kind == "f":
                return self.const(v, T), T
            return self.const(float(v), F64), F64
        if isinstance(expr, ir.Var):
            raise TranslationError(f"unknown name {expr.name!r}")
        if isinstance(expr, ir.Access):
            arr = self.array(scope, expr.array)
            code = self.subscript(expr, scope, vset)
            if arr.np != T:
                return f"rt.cast({code}, {self.dtype_obj(T)})", T
            return code, T
        if isinstance(expr, ir.Neg):
            code, t = self.value(expr.operand, T, scope, vec)
            return f"(-{code})", t
        if isinstance(expr, ir.BinOp):
            (lc, lt), (rc, rt_) = (self.value(e, T, scope, vec) for e in (expr.lhs, expr.rhs))
            if expr.op in ir.COMPARE_OPS:
                return f"({lc} {expr.op} {rc})", BOOL
            t = np.result_type(lt, rt_)
            if expr.op == "/" and lt.kind in "iub" and rt_.kind in "iub":
                return f"rt.tdiv({lc}, {rc})", t
            if expr.op in ir.ARITH_OPS:
                return f"({lc} {expr.op} {rc})", t
        if isinstance(expr, ir.Call):
            return self.call(expr, T, scope, vec, isvec)
        raise TranslationError(f"cannot evaluate {expr!r}")

    def call(self, expr, T, scope, vec, isvec):
        args = [self.value(a, T, scope, vec) for a in expr.args]
        f = expr.func
        if f == "select" and len(args) == 3:
            (cc, ct), (ac, at), (bc, bt) = args
            if ct != BOOL:
                cc = f"({cc} != 0)"
            t = np.result_type(at, bt)
            ac = ac if at == t else f"rt.cast({ac}, {self.dtype_obj(t)})"
            bc = bc if bt == t else f"rt.cast({bc}, {self.dtype_obj(t)})"
            return (f"np.where({cc}, {ac}, {bc})" if isvec else f"({ac} if {cc} else {bc})"), t
        if f in ("exp", "log", "sqrt", "tanh", "erf", "rsqrt") and len(args) == 1:
            code, t = args[0]
            if t.kind != "f":
                code, t = f"rt.cast({code}, {self.dtype_obj(F64)})", F64
            fn = {"erf": "rt.erf", "rsqrt": "rt.rsqrt"}.get(f, f"np.{f}")
            return f"{fn}({code})", t
        if f == "abs" and len(args) == 1:
            return f"np.abs({args[0][0]})", args[0][1]
        if f in ("max", "min", "pow") and len(args) == 2:
            (ac, at), (bc, bt) = args
            t = np.result_type(at, bt)
            if f == "pow":
                if t.kind != "f":
                    return f"np.float_power({ac}, {bc})", F64
                return f"np.power({ac}, {bc})", t
            return f"np.{f}imum({ac}, {bc})", t
        raise TranslationError(f"bad call {f}/{len(args)}")

"""Random programs (hypothesis): the vectorised interpreter, the sequential interpreter
(``vectorize=False``) and an independent tree-walking evaluator written here must agree bit
for bit. Programs mix perfect nests, split-tail loops, triangular bounds, locals, scalar
accumulators, reductions of every kind and random in-bounds affine / quasi-affine indices
(so writes are sometimes injective, sometimes not, and some loops carry dependences)."""
from __future__ import annotations

import operator

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest

from dojo_core import interp, ir
from dojo_core.interp import codegen as interp_codegen
from dojo_core.interp import runtime as rt
from dojo_core.printer import print_program

C, V, A, B, N_ = ir.Const, ir.Var, ir.Access, ir.BinOp, ir.Neg
F64, I64 = np.dtype(np.float64), np.dtype(np.int64)


class Builder:
    """Draws one random program; every access stays in bounds by construction."""

    def __init__(self, data):
        self.draw = data.draw
        self.sizes = {"N": self.draw(st.integers(1, 5)), "M": self.draw(st.integers(1, 6))}
        self.arrays = {"X": ("f64", ("N", "M")), "Y": ("f64", ("N", "M")), "z": ("f64", ("M",)),
                       "w": ("f64", ("N",)), "s": ("f64", ()), "K": ("i64", ("N", "M")),
                       "kk": ("i64", ())}
        self.count = 0

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def pick(self, options):
        return options[self.draw(st.integers(0, len(options) - 1))]

    # indices ------------------------------------------------------------------------

    def index(self, dim, scope):
        size = V(dim)
        choices = [C(0), B("-", size, C(1))]
        for e in scope["idx"][dim]:
            choices += [e, B("-", B("-", size, C(1)), e), B("//", e, C(2)),
                        B("%", B("+", e, C(1)), size),
                        ir.Call("min", (B("+", e, C(1)), B("-", size, C(1)))),
                        ir.Call("max", (B("-", e, C(1)), C(0)))]
            choices += [e] * 3
        return self.pick(choices)

    def access(self, name, scope):
        dtype, dims = scope["arrays"][name]
        return A(name, tuple(self.index(d, scope) for d in dims))

    # values -------------------------------------------------------------------------

    def value(self, dtype, scope, depth=0):
        names = [n for n, (t, _) in scope["arrays"].items() if t == dtype]
        kind = self.draw(st.integers(0, 9 if depth < 3 else 3))
        if kind <= 1:
            return self.access(self.pick(names), scope)
        if kind == 2:
            return C(self.pick([0, 1, 2, 3]) if dtype == "i64" else self.pick([0.5, -1.25, 2, 0.0]))
        if kind == 3:
            its = [V(i) for i in scope["iters"]] + [V("N")]
            return self.pick(its)
        sub = lambda: self.value(dtype, scope, depth + 1)    # noqa: E731
        if kind <= 5:
            ops = ["+", "-", "*"] + (["/"] if dtype == "f64" else [])
            return B(self.pick(ops), sub(), sub())
        if kind == 6:
            return N_(sub())
        if kind == 7:
            cond = B(self.pick(["<", "<=", ">", ">=", "==", "!="]), sub(), sub())
            return ir.Call("select", (cond, sub(), sub()))
        if kind == 8:
            return ir.Call(self.pick(["max", "min"]), (sub(), sub()))
        if dtype == "i64":
            return ir.Call("abs", (sub(),))
        f = self.pick(["exp", "tanh", "erf", "abs", "sqrt", "log", "rsqrt", "pow"])
        if f == "pow":
            return ir.Call("pow", (ir.Call("abs", (sub(),)), C(2.0)))
        return ir.Call(f, (sub(),))

    # statements ---------------------------------------------------------------------

    def assign(self, scope):
        target = self.pick([n for n in scope["arrays"] if n not in ("X", "kk")])
        dtype = scope["arrays"][target][0]
        op = self.pick(list(ir.ASSIGN_OPS) + ["=", "+="])
        return ir.Assign(self.access(target, scope), op, self.value(dtype, scope))

    def loop(self, scope, depth):
        dim = self.pick(["N", "M"])
        size = V(dim)
        kind = self.draw(st.integers(0, 3))
        if kind == 3:                     # split with a tail: i0 x i1 over dim
            f = self.draw(st.integers(2, 4))
            a, b = self.fresh("a"), self.fresh("b")
            expr = B("+", B("*", C(f), V(a)), V(b))
            inner = self.extend(scope, [a, b], dim, expr)
            hi_b = ir.Call("min", (C(f), B("-", size, B("*", C(f), V(a)))))
            body = self.block(inner, depth + 1)
            lo_a = B("//", B("+", size, C(f - 1)), C(f))
            return ir.Loop(a, C(0), lo_a, (), (ir.Loop(b, C(0), hi_b, (), body),))
        i = self.fresh("i")
        bounds = [(C(0), size), (C(1), size), (C(0), ir.Call("min", (size, C(3)))),
                  (C(0), B("-", size, C(1)))]
        for e in scope["idx"][dim]:
            bounds += [(C(0), B("+", e, C(1))), (e, size)]
        lo, hi = self.pick(bounds)
        inner = self.extend(scope, [i], dim, V(i))
        return ir.Loop(i, lo, hi, (), self.block(inner, depth + 1))

    @staticmethod
    def extend(scope, iters, dim, expr):
        idx = {d: list(v) for d, v in scope["idx"].items()}
        idx[dim].append(expr)
        return {"arrays": dict(scope["arrays"]), "iters": scope["iters"] + iters, "idx": idx}

    def block(self, scope, depth):
        scope = {"arrays": dict(scope["arrays"]), "iters": scope["iters"], "idx": scope["idx"]}
        body = []
        if depth and self.draw(st.integers(0, 4)) == 0:
            name = self.fresh("t")
            dtype, dims = self.pick([("f64", ()), ("f64", ("M",)), ("i64", ())])
            body.append(ir.Local(name, dtype, tuple(V(d) for d in dims)))
            scope["arrays"][name] = (dtype, dims)
        for _ in range(self.draw(st.integers(1, 3))):
            if depth < 3 and self.draw(st.integers(0, 2)) > 0:
                body.append(self.loop(scope, depth))
            else:
                body.append(self.assign(scope))
        return tuple(body)

    def program(self):
        scope = {"arrays": dict(self.arrays), "iters": [], "idx": {"N": [], "M": []}}
        body = self.block(scope, 0)
        kinds = {"X": "in", "kk": "in"}
        decls = tuple(ir.ArrayDecl(kinds.get(n, "inout"), n, t, tuple(V(d) for d in dims))
                      for n, (t, dims) in self.arrays.items())
        return ir.Program("rand", tuple(self.sizes.items()), decls, body)


# ------------------------------------------------------------------------- tree walker

class Walker:
    """A direct evaluator of the IR, written independently of the interpreter."""

    def __init__(self, program, arrays):
        self.sizes = program.size_values
        self.arrays = arrays

    def int_value(self, e, env):
        if isinstance(e, ir.Const) and isinstance(e.value, int):
            return e.value
        if isinstance(e, ir.Var):
            return env[e.name] if e.name in env else self.sizes[e.name]
        if isinstance(e, ir.Neg):
            inner = self.int_value(e.operand, env)
            return None if inner is None else -inner
        if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*", "//", "%"):
            a, b = self.int_value(e.lhs, env), self.int_value(e.rhs, env)
            if a is None or b is None:
                return None
            return {"+": operator.add, "-": operator.sub, "*": operator.mul,
                    "//": operator.floordiv, "%": operator.mod}[e.op](a, b)
        if isinstance(e, ir.Call) and e.func in ("min", "max"):
            a, b = (self.int_value(x, env) for x in e.args)
            if a is None or b is None:
                return None
            return min(a, b) if e.func == "min" else max(a, b)
        return None

    def value(self, e, t, env, arrays):
        as_int = self.int_value(e, env)
        if as_int is not None:
            return t.type(as_int)
        if isinstance(e, ir.Const):
            return t.type(e.value)
        if isinstance(e, ir.Access):
            return arrays[e.array][tuple(self.int_value(i, env) for i in e.indices)]
        if isinstance(e, ir.Neg):
            return -self.value(e.operand, t, env, arrays)
        if isinstance(e, ir.BinOp):
            a, b = self.value(e.lhs, t, env, arrays), self.value(e.rhs, t, env, arrays)
            ops = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
                   "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                   "==": np.equal, "!=": np.not_equal}
            return ops[e.op](a, b)
        args = [self.value(a, t, env, arrays) for a in e.args]
        if e.func == "select":
            return args[1] if args[0] else args[2]
        fns = {"exp": np.exp, "tanh": np.tanh, "erf": rt.erf, "abs": np.abs, "sqrt": np.sqrt,
               "log": np.log, "rsqrt": lambda x: 1 / np.sqrt(x), "pow": np.power,
               "max": np.maximum, "min": np.minimum}
        return fns[e.func](*args)

    def block(self, body, env, arrays):
        arrays = dict(arrays)
        for s in body:
            if isinstance(s, ir.Local):
                dtype = np.dtype(np.float64 if s.dtype == "f64" else np.int64)
                shape = tuple(self.sizes[d.name] for d in s.dims)
                fill = np.nan if dtype.kind == "f" else np.iinfo(dtype).min
                arrays[s.name] = np.full(shape, fill, dtype)
            elif isinstance(s, ir.Loop):
                for v in range(self.int_value(s.lo, env), self.int_value(s.hi, env)):
                    self.block(s.body, {**env, s.iterator: v}, arrays)
            else:
                arr = arrays[s.target.array]
                idx = tuple(self.int_value(i, env) for i in s.target.indices)
                val = self.value(s.value, arr.dtype, env, arrays)
                old = arr[idx]
                arr[idx] = {"=": lambda: val, "+=": lambda: old + val, "*=": lambda: old * val,
                            "max=": lambda: np.maximum(old, val),
                            "min=": lambda: np.minimum(old, val)}[s.op]()

    def run(self, program):
        with np.errstate(all="ignore"):
            self.block(program.body, {}, self.arrays)
        return self.arrays


def random_inputs(program, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for d in program.arrays:
        shape = interp.array_shape(program, d)
        if d.dtype == "f64":
            out[d.name] = rng.normal(size=shape)
        else:
            out[d.name] = rng.integers(-5, 6, size=shape).astype(np.int64)
    return out


@pytest.fixture(scope="module", autouse=True)
def vectorise_small_regions():
    """Vectorise even the tiny iteration sets of these programs (normally run as loops)."""
    saved = interp_codegen.SMALL_REGION
    interp_codegen.SMALL_REGION = 0
    interp._compile.cache_clear()
    yield
    interp_codegen.SMALL_REGION = saved
    interp._compile.cache_clear()


STATS: dict = {}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_vectorised_sequential_and_tree_walker_agree(data):
    program = Builder(data).program()
    inputs = random_inputs(program, data.draw(st.integers(0, 2 ** 16)))
    frozen = {k: v.copy() for k, v in inputs.items()}
    text = print_program(program)
    fast = interp.run(program, inputs)
    slow = interp.run(program, inputs, vectorize=False)
    walked = Walker(program, {k: v.copy() for k, v in inputs.items()}).run(program)
    for name in fast:
        assert fast[name].dtype == slow[name].dtype == walked[name].dtype
        assert np.array_equal(slow[name], walked[name], equal_nan=True), (name, text)
        assert np.array_equal(fast[name], slow[name], equal_nan=True), (name, text)
    for k in inputs:
        assert np.array_equal(inputs[k], frozen[k], equal_nan=True)
    source = interp.source(program)
    for feature in ("rt.expand", "_set", ".at(", "rt.injective", "_it is not None", "else:"):
        STATS[feature] = STATS.get(feature, 0) + (feature in source)
    STATS["programs"] = STATS.get("programs", 0) + 1


def test_random_programs_exercise_every_vectorisation_path():
    if STATS.get("programs", 0) < 100:
        pytest.skip("run together with the random program test")
    # (runtime injectivity checks are rare here: tests/core/test_interp.py covers them)
    assert all(STATS[f] >= 5 for f in STATS if f != "rt.injective"), sorted(STATS.items())

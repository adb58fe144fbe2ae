"""Hypothesis strategies for the Dojo IR (DESIGN.md section 3).

``programs()``     random VALID kernels, valid by construction: every name is declared once,
                   every index provably stays in bounds, every ``out``/``temp`` element is
                   written (with ``=``, by a nest that covers the whole array) before any
                   statement may read it, every local is fully written in its block before
                   it is read, and every expression is well typed for its target's dtype.
``expressions()``  arbitrary expression trees (not necessarily well typed) for printer round
                   trips; bare names follow ``EXPR_VARS`` / ``EXPR_SCALARS`` (see
                   ``expression_program``).

Both are plain ``hypothesis.strategies`` composites: deterministic under hypothesis' seed
and cheap to draw (programs stay small: sizes 1..12, at most a dozen statements).

Shape of a generated program::

    # doc lines (optional)
    kernel kNAME(N = .., M = .., K = ..)
    in/inout/out/temp arrays, ranks 0..3, dims from {N, M, 2*N, N + 2, 3, ...}
    phase 1: for every out/temp array, one nest writing every element with '='
             (plain, shifted 1..D + 1, reversed or split-with-min-tail loops)
    phase 2: random nests (depth 0..3 logical loops, annotations) of statements with every
             assignment op, reading in/inout/out/temp arrays and locals, with locals
             (scalar and array, with memory spaces) declared, filled, then read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from dojo_core import ir

# ----------------------------------------------------------------------------- names

SIZE_NAMES = ("N", "M", "K")
ARRAY_NAMES = ("A", "B", "C", "D", "E", "F", "G", "H")
SCALAR_NAMES = ("alpha", "beta", "gamma_", "delta")
KERNEL_NAMES = ("k", "kern", "matmul", "my_kernel2", "_k")
DOC_LINES = ("C = A @ B", "a kernel", "", "x: y, z; (w)", "TODO 1e-05 # not a comment end")
FLOAT_CONSTS = (0.5, 2.5, 1e-05, 1.0, 0.0, 3.25, 1e-07, 100.0, 6.02e+23, 0.1)
SPLIT_FACTORS = (2, 3, 4, 8)


def c(v):
    return ir.Const(v)


def v(name):
    return ir.Var(name)


def add(a, b):
    return ir.BinOp("+", a, b)


def sub(a, b):
    return ir.BinOp("-", a, b)


def mul(a, b):
    return ir.BinOp("*", a, b)


# ----------------------------------------------------------------------------- context

@dataclass(frozen=True)
class Arr:
    """What the generator knows of an array, scalar or local: name, dtype, dims (Exprs)."""
    name: str
    dtype: str
    dims: tuple
    kind: str            # in | out | inout | temp | local


@dataclass(frozen=True)
class LIt:
    """A logical iterator: ranges over [0, extent) of dim expression `dim` via `index`;
    `full` when every value of [0, extent) is reached (usable to initialise)."""
    dim: object
    index: object
    full: bool
    iterators: tuple     # the physical iterator names (for Var leaves)


@dataclass
class Gen:
    draw: object
    sizes: dict
    annotate: bool = True
    suffixed: bool = False
    counter: list = field(default_factory=lambda: [0])

    def fresh(self, prefix):
        self.counter[0] += 1
        if self.suffixed and prefix == "i":      # i, i_w, i_w_w, ...: names that end in '_w'
            return "i" + "_w" * (self.counter[0] - 1)
        return f"{prefix}{self.counter[0]}"

    def value(self, dim):
        from dojo_core.poly import const_value
        return const_value(dim, self.sizes)


def _dim_exprs(size_names):
    out = []
    for n in size_names:
        out += [v(n), v(n), add(v(n), c(2)), mul(c(2), v(n))]
    out += [c(1), c(3)]
    return out


# ----------------------------------------------------------------------------- loops

def _loops_for(g: Gen, dim, full_only: bool):
    """(list of (iterator, lo, hi) outermost first, LIt) for one logical iterator."""
    d = g.draw
    kinds = ["plain", "plain", "shifted", "reversed", "split"]
    if not full_only:
        kinds += ["partial_lo", "partial_hi", "maxbound"]
    kind = d(st.sampled_from(kinds))
    if kind == "split":
        f = d(st.sampled_from(SPLIT_FACTORS))
        o, i = g.fresh("i"), g.fresh("i")
        outer = (o, c(0), ir.BinOp("//", add(dim, c(f - 1)), c(f)))
        inner = (i, c(0), ir.Call("min", (c(f), sub(dim, mul(c(f), v(o))))))
        return [outer, inner], LIt(dim, add(mul(c(f), v(o)), v(i)), True, (o, i))
    it = g.fresh("i")
    if kind == "plain":
        return [(it, c(0), dim)], LIt(dim, v(it), True, (it,))
    if kind == "shifted":
        return [(it, c(1), add(dim, c(1)))], LIt(dim, sub(v(it), c(1)), True, (it,))
    if kind == "reversed":
        return [(it, c(0), dim)], LIt(dim, sub(sub(dim, c(1)), v(it)), True, (it,))
    if kind == "partial_lo":     # 1..D: index i or i - 1
        idx = d(st.sampled_from([v(it), sub(v(it), c(1))]))
        return [(it, c(1), dim)], LIt(dim, idx, False, (it,))
    if kind == "partial_hi":     # 0..D - 1 (possibly empty)
        return [(it, c(0), sub(dim, c(1)))], LIt(dim, v(it), False, (it,))
    # maxbound: 0..max(1, D - 2) stays within 0..D because D >= 1
    return [(it, c(0), ir.Call("max", (c(1), sub(dim, c(2)))))], LIt(dim, v(it), False, (it,))


def _annotations(d, annotate=True):
    if not annotate:
        return ()
    n = d(st.sampled_from([0, 0, 0, 1, 1, 2]))
    return tuple(d(st.lists(st.sampled_from(ir.ANNOTATIONS), min_size=n, max_size=n, unique=True)))


def _wrap(g, loops, body):
    """Nest body inside loops (outermost first)."""
    for it, lo, hi in reversed(loops):
        body = (ir.Loop(it, lo, hi, _annotations(g.draw, g.annotate), tuple(body)),)
    return tuple(body)


# ----------------------------------------------------------------------------- indices

def _index(g: Gen, dim, lits, exact_only=False):
    """An index expression provably in [0, value(dim))."""
    d = g.draw
    same = [l for l in lits if l.dim == dim]
    extent = g.value(dim)
    choices = []
    if same:
        choices += ["same"] * 4
    if exact_only:
        return d(st.sampled_from(same)).index
    choices += ["zero", "last"]
    if lits:
        choices += ["mod"]
    if same:
        choices += ["reverse", "half"]
    k = d(st.sampled_from(choices))
    if k == "same":
        return d(st.sampled_from(same)).index
    if k == "zero":
        return c(0)
    if k == "last":
        return sub(dim, c(1))
    if k == "reverse":
        return sub(sub(dim, c(1)), d(st.sampled_from(same)).index)
    if k == "half":                      # i // 2 <= i < extent
        return ir.BinOp("//", d(st.sampled_from(same)).index, c(2))
    # (index + k) % D with index >= 0
    l = d(st.sampled_from(lits))
    base = l.index
    off = d(st.integers(0, 3))
    if off:
        base = add(base, c(off))
    return ir.BinOp("%", base, dim if d(st.booleans()) else c(extent))


def _access(g: Gen, arr: Arr, lits):
    return ir.Access(arr.name, tuple(_index(g, dim, lits) for dim in arr.dims))


# ----------------------------------------------------------------------------- values

def _leaf_int(g, lits):
    d = g.draw
    opts = ["const", "negconst"]
    names = [n for l in lits for n in l.iterators] + list(g.sizes)
    if names:
        opts.append("var")
    k = d(st.sampled_from(opts))
    if k == "const":
        return c(d(st.integers(0, 9)))
    if k == "negconst":
        return c(-d(st.integers(1, 9)))
    return v(d(st.sampled_from(names)))


def _int_index_like(g, lits, depth):
    """An integer-kind expression made of literals, iterators and sizes."""
    d = g.draw
    if depth <= 0 or d(st.integers(0, 2)) == 0:
        return _leaf_int(g, lits)
    op = d(st.sampled_from(["+", "-", "*", "//", "%"]))
    lhs = _int_index_like(g, lits, depth - 1)
    if op in ("//", "%"):
        return ir.BinOp(op, lhs, c(d(st.integers(1, 5))))
    return ir.BinOp(op, lhs, _int_index_like(g, lits, depth - 1))


def _value(g: Gen, dtype, readable, lits, depth, strict=False):
    """A value expression whose kind may be stored into `dtype`. With strict (floats only),
    the expression's kind is a float (never an integer literal/iterator expression)."""
    d = g.draw
    is_float = dtype in ir.FLOAT_DTYPES
    arrays = [a for a in readable if a.dtype == dtype]
    if depth <= 0:
        opts = ["const"] + ["access"] * (3 if arrays else 0)
        if not strict:
            opts += ["int"]
        k = d(st.sampled_from(opts))
        if k == "access":
            return _access(g, d(st.sampled_from(arrays)), lits)
        if k == "int":
            return _leaf_int(g, lits)
        if is_float:
            val = d(st.sampled_from(FLOAT_CONSTS))
            return c(-val if d(st.booleans()) else val)
        return c(d(st.integers(-9, 9)))
    kinds = ["leaf", "neg", "bin", "bin", "minmax", "abs", "select"]
    if is_float:
        kinds += ["func", "div", "pow", "inf"]
        if not strict:
            kinds += ["intexpr"]
    else:
        kinds += ["intdiv"]
    k = d(st.sampled_from(kinds))
    sub_ = lambda s=False: _value(g, dtype, readable, lits, depth - 1, s)  # noqa: E731
    if k == "leaf":
        return _value(g, dtype, readable, lits, 0, strict)
    if k == "neg":
        return ir.Neg(sub_(strict))
    if k == "bin":
        op = d(st.sampled_from(["+", "-", "*"]))
        a, b = sub_(strict), sub_()
        return ir.BinOp(op, *(d(st.permutations([a, b]))))
    if k == "minmax":
        return ir.Call(d(st.sampled_from(["max", "min"])), (sub_(strict), sub_()))
    if k == "abs":
        return ir.Call("abs", (sub_(strict),))
    if k == "select":
        op = d(st.sampled_from(ir.COMPARE_OPS))
        cond = ir.BinOp(op, sub_(), sub_())
        return ir.Call("select", (cond, sub_(strict), sub_()))
    if k == "func":
        f = d(st.sampled_from(["exp", "log", "sqrt", "rsqrt", "tanh", "erf"]))
        return ir.Call(f, (sub_(),))
    if k == "div":                       # '/' needs a float operand: the rhs is strict
        return ir.BinOp("/", sub_(), sub_(True))
    if k == "pow":
        return ir.Call("pow", (sub_(strict), sub_()))
    if k == "inf":
        inf = c(float("inf")) if d(st.booleans()) else c(float("-inf"))
        return ir.Call(d(st.sampled_from(["max", "min"])), (inf, sub_(True)))
    if k == "intexpr":                   # integer arithmetic (// and %) inside a float value
        return add(sub_(True), _int_index_like(g, lits, 2))
    # intdiv (integer dtypes): // and % by positive constants
    return ir.BinOp(d(st.sampled_from(["//", "%"])), sub_(), c(d(st.integers(1, 7))))


# ----------------------------------------------------------------------------- statements

def _init_nest(g: Gen, arr: Arr, readable):
    """A nest writing every element of arr with '='."""
    d = g.draw
    loops, lits = [], []
    for dim in arr.dims:
        ls, lit = _loops_for(g, dim, full_only=True)
        loops.append(ls)
        lits.append(lit)
    order = d(st.permutations(range(len(arr.dims))))
    flat = [lp for k in order for lp in loops[k]]
    target = ir.Access(arr.name, tuple(l.index for l in lits))
    value = _value(g, arr.dtype, readable, lits, d(st.integers(0, 2)))
    return _wrap(g, flat, [ir.Assign(target, "=", value)])


def _local_block(g: Gen, readable, writable, lits, depth):
    """Declare a local, fill it completely, then run a body that may read it."""
    d = g.draw
    dtype = d(st.sampled_from(["f32", "f32", "f64", "i32"]))
    space = d(st.sampled_from([None, None, "register", "stack", "shared"]))
    if d(st.booleans()):                      # scalar local
        name = g.fresh("s")
        loc = Arr(name, dtype, (), "local")
        stmts = [ir.Local(name, dtype, (), space),
                 ir.Assign(ir.Access(name), "=", _value(g, dtype, readable, lits, 1))]
        if lits or d(st.booleans()):
            ls, lit = _loops_for(g, d(st.sampled_from(_dim_exprs(g.sizes))), full_only=False)
            op = d(st.sampled_from(ir.REDUCTION_OPS))
            red = ir.Assign(ir.Access(name), op,
                            _value(g, dtype, readable, lits + [lit], 1))
            stmts += list(_wrap(g, ls, [red]))
    else:
        name = g.fresh("t")
        dims = tuple(d(st.lists(st.sampled_from(_dim_exprs(g.sizes)), min_size=1, max_size=2)))
        loc = Arr(name, dtype, dims, "local")
        init = _init_nest(g, loc, readable)
        stmts = [ir.Local(name, dtype, dims, space)] + list(init)
    rest = _body(g, readable + [loc], writable + [loc], lits, depth, min_size=1)
    return stmts + list(rest)


def _assign(g: Gen, readable, writable, lits):
    d = g.draw
    arr = d(st.sampled_from(writable))
    op = d(st.sampled_from(ir.ASSIGN_OPS))
    target = _access(g, arr, lits)
    return ir.Assign(target, op, _value(g, arr.dtype, readable, lits, d(st.integers(0, 3))))


def _body(g: Gen, readable, writable, lits, depth, min_size=1):
    d = g.draw
    n = d(st.integers(min_size, 3 if depth > 0 else 2))
    out = []
    for _ in range(n):
        k = d(st.sampled_from(["assign", "assign", "loop", "loop", "local"] if depth > 0
                              else ["assign", "assign", "assign", "local"]))
        if k == "assign" or (k == "local" and g.counter[0] > 24):
            out.append(_assign(g, readable, writable, lits))
        elif k == "loop":
            dim = d(st.sampled_from(_dim_exprs(g.sizes)))
            ls, lit = _loops_for(g, dim, full_only=False)
            inner = _body(g, readable, writable, lits + [lit], depth - 1)
            out.extend(_wrap(g, ls, inner))
        else:
            out.extend(_local_block(g, readable, writable, lits, max(0, depth - 1)))
    return out


@st.composite
def programs(draw, max_depth: int = 3, annotate: bool = True, suffixed_iterators: bool = False):
    """A random valid Dojo program (see the module docstring). Loop annotations are
    random syntax only (a `parallel` loop may carry a reduction); annotate=False omits them.
    suffixed_iterators=True names the iterators i, i_w, i_w_w, ... (legal names that once
    collided with the checker's renaming of a writer's iterators)."""
    n_sizes = draw(st.integers(1, 3))
    sizes = {name: draw(st.integers(1, 12)) for name in SIZE_NAMES[:n_sizes]}
    g = Gen(draw, sizes, annotate, suffixed_iterators)
    dims_pool = _dim_exprs(list(sizes))
    n_arrays = draw(st.integers(1, 3))
    arrays = []
    scalar_pool = iter(SCALAR_NAMES)
    for k in range(n_arrays):
        kind = draw(st.sampled_from(["in", "in", "out", "inout", "temp"] if k else ["out", "inout"]))
        rank = draw(st.sampled_from([0, 1, 1, 2, 2, 3]))
        dims = tuple(draw(st.sampled_from(dims_pool)) for _ in range(rank))
        dtype = draw(st.sampled_from(["f32", "f32", "f64", "i32", "i64", "f16", "bf16"]))
        name = next(scalar_pool) if rank == 0 else ARRAY_NAMES[k]
        arrays.append(Arr(name, dtype, dims, kind))
    if not any(a.kind in ("out", "inout", "temp") for a in arrays):
        arrays[0] = Arr(arrays[0].name, arrays[0].dtype, arrays[0].dims, "out")
    inputs = [a for a in arrays if a.kind in ("in", "inout")]
    produced = [a for a in arrays if a.kind in ("out", "temp")]
    writable = [a for a in arrays if a.kind in ("out", "inout", "temp")]
    body = []
    for arr in produced:                     # phase 1: write every out/temp element first
        body.extend(_init_nest(g, arr, inputs))
    readable = inputs + produced
    depth = draw(st.integers(0, max_depth))
    if draw(st.integers(0, 3)) or not body:  # phase 2
        body.extend(_body(g, readable, writable, [], depth))
    doc = tuple(draw(st.lists(st.sampled_from(DOC_LINES), max_size=2)))
    decls = tuple(ir.ArrayDecl(a.kind, a.name, a.dtype, a.dims) for a in arrays)
    return ir.Program(draw(st.sampled_from(KERNEL_NAMES)), tuple(sizes.items()), decls,
                      tuple(body), doc)


# ----------------------------------------------------------------------------- expressions

EXPR_VARS = ("i", "j", "N", "x_1")          # parse as Var
EXPR_SCALARS = ("s", "alpha")                # parse as Access(name, ()) when declared scalars
EXPR_ARRAYS = ("A", "B")

_const = st.one_of(
    st.integers(-20, 20),
    st.integers(-(2 ** 40), 2 ** 40),
    st.sampled_from([1e-05, 2.5, -2.5, 0.0, -0.0, 1e-07, 1.5e-07, 1e16, 1e+300, 0.1,
                     float("inf"), float("-inf"), 3.0, -1.0, 123456.789]),
    st.floats(allow_nan=False, allow_infinity=True, width=64),
).map(ir.Const)

_leaf = st.one_of(
    _const,
    st.sampled_from(EXPR_VARS).map(ir.Var),
    st.sampled_from(EXPR_SCALARS).map(lambda n: ir.Access(n, ())),
)


def _extend(children):
    def call(name):
        return st.tuples(*[children] * ir.FUNCTIONS[name]).map(lambda a: ir.Call(name, a))
    return st.one_of(
        st.builds(ir.BinOp, st.sampled_from(ir.BINARY_OPS), children, children),
        st.builds(ir.BinOp, st.sampled_from(ir.BINARY_OPS), children, children),
        children.map(ir.Neg),
        st.sampled_from(sorted(ir.FUNCTIONS)).flatmap(call),
        st.builds(ir.Access, st.sampled_from(EXPR_ARRAYS),
                  st.lists(children, min_size=1, max_size=3).map(tuple)),
    )


def expressions(max_leaves: int = 25):
    """Arbitrary expression trees: any nesting of BinOp (all ops), Neg, Call (all functions,
    right arity), Const (ints, negative, floats, -0.0, inf), Access and Var."""
    return st.recursive(_leaf, _extend, max_leaves=max_leaves)


def expression_program(text: str) -> str:
    """A tiny program whose single statement stores `text` (an expression's source), with
    EXPR_SCALARS declared as scalars so that they parse back as Access(name, ())."""
    decls = "".join(f"in {n}: f32\n" for n in EXPR_SCALARS)
    decls += "".join(f"in {n}: f32[N, N, N]\n" for n in EXPR_ARRAYS)
    return f"kernel e(N = 4)\n{decls}out R: f32\n\nR = {text}\n"

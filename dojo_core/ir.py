"""The Dojo IR: immutable frozen dataclasses (DESIGN.md section 3).

Every node compares by value; source locations (`loc`) are carried for error
messages but never take part in equality or hashing, so that
``parse(print(p)) == p`` compares meaning, not positions.

Expressions
    Const(value)              int or float literal (``inf`` is ``float('inf')``)
    Var(name)                 a loop iterator or a size
    Access(array, indices)    an element of an array, local or scalar (indices == ())
    BinOp(op, lhs, rhs)       op in BINARY_OPS
    Neg(operand)              unary minus
    Call(func, args)          func in FUNCTIONS (``select`` included)

Statements
    Assign(target, op, value) op in ASSIGN_OPS ('=', '+=', '*=', 'max=', 'min=')
    Loop(iterator, lo, hi, annotations, body)   half-open range lo..hi
    Local(name, dtype, dims, space)             a buffer living in its enclosing block
    Prefetch(array, ranges)   a box of an array the code is about to touch: one half-open
                              (lo, hi) range per dimension; a cache hint that computes nothing

Program(name, sizes, arrays, body, doc)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64", "i8")
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
INT_DTYPES = ("i32", "i64", "i8")
# i8 values are promoted (C's integer promotion): arithmetic on them happens in i32 (or in
# i64 beside i64 values), and a store into an i8 array wraps modulo 256 (two's complement)
PROMOTED_DTYPES = {"i8": "i32"}
ARRAY_KINDS = ("in", "out", "inout", "temp")
MEMORY_SPACES = ("register", "stack", "shared")
ASSIGN_OPS = ("=", "+=", "*=", "max=", "min=")
REDUCTION_OPS = ("+=", "*=", "max=", "min=")
ARITH_OPS = ("+", "-", "*", "/", "//", "%")
COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=")
BINARY_OPS = ARITH_OPS + COMPARE_OPS
# name -> number of arguments
FUNCTIONS = {
    "exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1, "erf": 1, "abs": 1,
    "max": 2, "min": 2, "pow": 2, "select": 3,
}
GPU_ANNOTATIONS = tuple(f"gpu.{kind}.{axis}" for kind in ("block", "thread") for axis in "xyz")
ANNOTATIONS = ("parallel", "vector", "unroll") + GPU_ANNOTATIONS


@dataclass(frozen=True)
class Loc:
    """A 1-based source position."""
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.line}:{self.col}"


def _loc() -> Optional[Loc]:
    return field(default=None, compare=False, hash=False, repr=False)


# --------------------------------------------------------------------------- expressions

@dataclass(frozen=True, eq=False)
class Const:
    """A literal. 0 and 0.0 (and 0.0 and -0.0) are different constants: they print
    differently, so they compare unequal."""
    value: Union[int, float]
    loc: Optional[Loc] = _loc()

    def _key(self):
        v = self.value
        return (type(v).__name__, v, str(v) if isinstance(v, float) else None)

    def __eq__(self, other):
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


@dataclass(frozen=True)
class Var:
    name: str
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Access:
    array: str
    indices: tuple = ()
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class BinOp:
    op: str
    lhs: "Expr"
    rhs: "Expr"
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Neg:
    operand: "Expr"
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple
    loc: Optional[Loc] = _loc()


Expr = Union[Const, Var, Access, BinOp, Neg, Call]


# --------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class Assign:
    target: Access
    op: str
    value: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Loop:
    iterator: str
    lo: Expr
    hi: Expr
    annotations: tuple = ()
    body: tuple = ()
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Local:
    name: str
    dtype: str
    dims: tuple = ()
    space: Optional[str] = None
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Prefetch:
    """``prefetch X[lo..hi, ...]``: the box of array X (one half-open affine range per
    dimension) that the code is about to touch. It computes nothing (the interpreter skips
    it, dependence analysis sees no access); the C generators turn it into cache hints."""
    array: str
    ranges: tuple = ()   # ((lo, hi), ...), one pair of Exprs per dimension
    loc: Optional[Loc] = _loc()

    @property
    def bounds(self) -> tuple:
        """Every bound expression, lo and hi of each dimension in order."""
        return tuple(e for pair in self.ranges for e in pair)


Stmt = Union[Assign, Loop, Local, Prefetch]


# --------------------------------------------------------------------------- program

@dataclass(frozen=True)
class ArrayDecl:
    kind: str            # in | out | inout | temp
    name: str
    dtype: str
    dims: tuple = ()     # () is a scalar
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Program:
    name: str
    sizes: tuple         # ((name, default int value), ...)
    arrays: tuple        # (ArrayDecl, ...)
    body: tuple          # (Stmt, ...)
    doc: tuple = ()      # leading comment lines, without the '# '
    loc: Optional[Loc] = _loc()

    @property
    def size_values(self) -> dict:
        return dict(self.sizes)

    def array(self, name: str) -> Optional[ArrayDecl]:
        for decl in self.arrays:
            if decl.name == name:
                return decl
        return None

    def with_sizes(self, overrides: dict) -> "Program":
        """The same kernel instantiated at other sizes; unknown names raise KeyError."""
        known = self.size_values
        for name in overrides:
            if name not in known:
                raise KeyError(name)
        sizes = tuple((n, int(overrides.get(n, v))) for n, v in self.sizes)
        return Program(self.name, sizes, self.arrays, self.body, self.doc, self.loc)


# --------------------------------------------------------------------------- traversal helpers

def walk_expr(expr) -> Iterator:
    """Yield expr and every sub-expression, parents first."""
    yield expr
    if isinstance(expr, Access):
        for e in expr.indices:
            yield from walk_expr(e)
    elif isinstance(expr, BinOp):
        yield from walk_expr(expr.lhs)
        yield from walk_expr(expr.rhs)
    elif isinstance(expr, Neg):
        yield from walk_expr(expr.operand)
    elif isinstance(expr, Call):
        for a in expr.args:
            yield from walk_expr(a)


def var_names(expr) -> set:
    """The names of the variables (iterators, sizes) an expression reads."""
    return {e.name for e in walk_expr(expr) if isinstance(e, Var)}


def stmt_exprs(stmt, local_dims: bool = False) -> tuple:
    """The expressions a statement holds itself (not those of its body): a loop's bounds,
    an assignment's target and value, a prefetch's bounds, and with ``local_dims`` a
    local's dimensions."""
    if isinstance(stmt, Loop):
        return (stmt.lo, stmt.hi)
    if isinstance(stmt, Assign):
        return (stmt.target, stmt.value)
    if isinstance(stmt, Prefetch):
        return stmt.bounds
    if local_dims and isinstance(stmt, Local):
        return tuple(stmt.dims)
    return ()


def int_tree(expr) -> bool:
    """True for integer arithmetic of iterators, sizes and integer constants: the
    expressions the interpreter (and the code generators after it) compute exactly as
    integers before converting them to the statement's type."""
    if isinstance(expr, Const):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, Var):
        return True
    if isinstance(expr, Neg):
        return int_tree(expr.operand)
    if isinstance(expr, BinOp) and expr.op in ("+", "-", "*", "//", "%"):
        return int_tree(expr.lhs) and int_tree(expr.rhs)
    if isinstance(expr, Call) and expr.func in ("min", "max") and len(expr.args) == 2:
        return all(int_tree(a) for a in expr.args)
    return False


def walk_stmts(body) -> Iterator:
    """Yield every statement of a body in textual order, loops before their bodies."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, Loop):
            yield from walk_stmts(stmt.body)


def loops(program_or_body) -> list:
    body = program_or_body.body if isinstance(program_or_body, Program) else program_or_body
    return [s for s in walk_stmts(body) if isinstance(s, Loop)]


def assignments(program_or_body) -> list:
    body = program_or_body.body if isinstance(program_or_body, Program) else program_or_body
    return [s for s in walk_stmts(body) if isinstance(s, Assign)]


def numbered(program_or_body) -> list:
    """The statements that are named ``sN`` (N from 0 in this order): assignments and
    prefetches, in textual order."""
    body = program_or_body.body if isinstance(program_or_body, Program) else program_or_body
    return [s for s in walk_stmts(body) if isinstance(s, (Assign, Prefetch))]


def prefetches(program_or_body) -> list:
    body = program_or_body.body if isinstance(program_or_body, Program) else program_or_body
    return [s for s in walk_stmts(body) if isinstance(s, Prefetch)]


def without_prefetches(program: Program) -> Program:
    """The same program with every prefetch removed (what it computes is unchanged: a
    prefetch computes nothing); the program itself when it holds none."""
    def strip(body):
        out = []
        for s in body:
            if isinstance(s, Prefetch):
                continue
            if isinstance(s, Loop):
                s = Loop(s.iterator, s.lo, s.hi, s.annotations, strip(s.body), s.loc)
            out.append(s)
        return tuple(out)
    if not prefetches(program):
        return program
    return Program(program.name, program.sizes, program.arrays, strip(program.body),
                   program.doc, program.loc)


def reads(stmt: Assign) -> list:
    """Array accesses read by an assignment, the target included for reductions."""
    found = [e for e in walk_expr(stmt.value) if isinstance(e, Access)]
    for idx in stmt.target.indices:
        found.extend(e for e in walk_expr(idx) if isinstance(e, Access))
    if stmt.op != "=":
        found.insert(0, stmt.target)
    return found


def map_expr(expr, fn):
    """Rebuild expr bottom-up, replacing each node n by fn(n) (fn may return n)."""
    if isinstance(expr, Access):
        expr = Access(expr.array, tuple(map_expr(e, fn) for e in expr.indices), expr.loc)
    elif isinstance(expr, BinOp):
        expr = BinOp(expr.op, map_expr(expr.lhs, fn), map_expr(expr.rhs, fn), expr.loc)
    elif isinstance(expr, Neg):
        expr = Neg(map_expr(expr.operand, fn), expr.loc)
    elif isinstance(expr, Call):
        expr = Call(expr.func, tuple(map_expr(a, fn) for a in expr.args), expr.loc)
    return fn(expr)


def substitute(expr, mapping: dict):
    """Replace Var(name) by mapping[name] (an Expr) everywhere in expr."""
    def fn(node):
        if isinstance(node, Var) and node.name in mapping:
            return mapping[node.name]
        return node
    return map_expr(expr, fn)

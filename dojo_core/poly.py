"""The polyhedral model of a program: statement instances, accesses and execution order as
islpy sets and maps, at the program's concrete sizes.

Every Assign is a statement S<n> (textual order). Its instances are the integer points of
its iteration domain (the bounds of its enclosing loops, quasi-affine with min/max, floor
division and modulo by constants). Execution order is the classic 2d+1 schedule
[p0, i1, p1, i2, p2, ...]: loop iterators interleaved with the statement's position in each
enclosing body, padded with zeros; instance a runs before b iff sched(a) <lex sched(b).

Everything here is exact Presburger arithmetic; a program that is not quasi-affine raises
NotAffine (the checker turns it into a located error).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
import islpy as isl

from . import ir


class NotAffine(Exception):
    """Not a DojoError: an internal signal; the checker turns it into a located DojoError
    and the transforms that catch it refuse instead, so it never reaches a user."""

    def __init__(self, message: str, node=None):
        super().__init__(message)
        self.node = node


def isl_name(iterator: str) -> str:
    """Iterator names in ISL text are prefixed so they never collide with ISL keywords."""
    return f"v_{iterator}"


def const_value(expr, sizes: dict):
    """The integer value of an expression built from integer constants and sizes, or None."""
    if isinstance(expr, ir.Const):
        return expr.value if isinstance(expr.value, int) else None
    if isinstance(expr, ir.Var):
        return sizes.get(expr.name)
    if isinstance(expr, ir.Neg):
        v = const_value(expr.operand, sizes)
        return None if v is None else -v
    if isinstance(expr, ir.BinOp) and expr.op in ("+", "-", "*", "//", "%"):
        a, b = const_value(expr.lhs, sizes), const_value(expr.rhs, sizes)
        if a is None or b is None:
            return None
        if expr.op in ("//", "%") and b <= 0:
            return None
        return {"+": a + b, "-": a - b, "*": a * b,
                "//": a // b if b else None, "%": a % b if b else None}[expr.op]
    if isinstance(expr, ir.Call) and expr.func in ("min", "max"):
        vals = [const_value(a, sizes) for a in expr.args]
        if None in vals:
            return None
        return min(vals) if expr.func == "min" else max(vals)
    return None


def affine_text(expr, sizes: dict, iterators, allow_minmax: bool = False) -> str:
    """ISL text of a quasi-affine integer expression over `iterators` (sizes are folded to
    their values). Raises NotAffine naming the first offending sub-expression."""
    value = const_value(expr, sizes)
    if value is not None:
        return f"({value})"
    if isinstance(expr, ir.Var):
        if expr.name in iterators:
            return isl_name(expr.name)
        raise NotAffine(f"'{expr.name}' is not an iterator or size here", expr)
    if isinstance(expr, ir.Neg):
        return f"(-{affine_text(expr.operand, sizes, iterators, allow_minmax)})"
    if isinstance(expr, ir.BinOp):
        op = expr.op
        if op in ("+", "-"):
            return (f"({affine_text(expr.lhs, sizes, iterators, allow_minmax)} {op} "
                    f"{affine_text(expr.rhs, sizes, iterators, allow_minmax)})")
        if op == "*":
            a, b = const_value(expr.lhs, sizes), const_value(expr.rhs, sizes)
            if a is not None:
                return f"({a}*{affine_text(expr.rhs, sizes, iterators, allow_minmax)})"
            if b is not None:
                return f"({b}*{affine_text(expr.lhs, sizes, iterators, allow_minmax)})"
            raise NotAffine("a product of two iterator expressions is not affine", expr)
        if op in ("//", "%"):
            d = const_value(expr.rhs, sizes)
            if d is None:
                raise NotAffine(f"'{op}' needs a constant divisor", expr)
            if d <= 0:
                raise NotAffine(f"'{op}' needs a positive divisor, got {d}", expr)
            inner = affine_text(expr.lhs, sizes, iterators, allow_minmax)
            return f"floor({inner}/{d})" if op == "//" else f"({inner} mod {d})"
        raise NotAffine(f"operator '{op}' is not allowed in an index or bound", expr)
    if isinstance(expr, ir.Call) and expr.func in ("min", "max") and allow_minmax:
        args = ", ".join(affine_text(a, sizes, iterators, allow_minmax) for a in expr.args)
        return f"{expr.func}({args})"
    if isinstance(expr, ir.Call):
        raise NotAffine(f"{expr.func}() is not allowed in an index"
                        + ("" if allow_minmax else " (min/max only in loop bounds)"), expr)
    if isinstance(expr, ir.Access):
        raise NotAffine(f"array element '{expr.array}[...]' in an index or bound is not affine "
                        "(indirect indexing is not supported)", expr)
    if isinstance(expr, ir.Const):
        raise NotAffine("a float constant in an index or bound", expr)
    raise NotAffine("not an affine expression", expr)


def never_equal(a: ir.Access, b: ir.Access, sizes: dict) -> bool:
    """True when accesses a and b (to one array) denote different elements for every
    integer value of the iterators they use, each iterator taking one value for both
    (``s[i % 2]`` and ``s[(i - 1) % 2]``); False when they may coincide or an index is not
    quasi-affine. An update through one then never changes what the other reads while
    those iterators keep their values."""
    if len(a.indices) != len(b.indices):
        return False
    names = sorted({n for x in (a, b) for e in x.indices for n in ir.var_names(e)} - set(sizes))
    try:
        eqs = [f"{affine_text(x, sizes, names)} = {affine_text(y, sizes, names)}"
               for x, y in zip(a.indices, b.indices)]
    except NotAffine:
        return False
    if not eqs:
        return False
    iters = ", ".join(isl_name(n) for n in names)
    return isl.Set(f"{{ [{iters}] : {' and '.join(eqs)} }}").is_empty()


def apart_in_loop(a: ir.Access, b: ir.Access, iterator: str, sizes: dict) -> bool:
    """True when neither access moves with loop ``iterator`` and they never denote the same
    element (``never_equal``): within one run of the loop, an update through one never
    changes what the other touches."""
    if any(iterator in ir.var_names(e) for x in (a, b) for e in x.indices):
        return False
    return never_equal(a, b, sizes)


@dataclass(frozen=True)
class Statement:
    """One Assign with its context: enclosing loops (outermost first) and body positions."""
    name: str
    assign: ir.Assign
    loops: tuple          # Loop nodes, outermost first
    positions: tuple      # position in each enclosing body; len == len(loops) + 1

    @property
    def iterators(self) -> tuple:
        return tuple(l.iterator for l in self.loops)

    def vars_text(self, suffix: str = "") -> str:
        return ", ".join(isl_name(i) + suffix for i in self.iterators)


class Model:
    """The polyhedral model of one program at its sizes (see module docstring)."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.sizes = program.size_values
        self.statements = []
        self.local_scope = {}   # local name -> iterators of the loops around its block
        self._collect(program.body, (), ())
        self.depth = max((len(s.loops) for s in self.statements), default=0)

    def _collect(self, body, loops, positions):
        for pos, stmt in enumerate(body):
            if isinstance(stmt, ir.Local):
                self.local_scope[stmt.name] = tuple(l.iterator for l in loops)
            elif isinstance(stmt, ir.Assign):
                self.statements.append(Statement(f"S{len(self.statements)}", stmt, loops,
                                                 positions + (pos,)))
            elif isinstance(stmt, ir.Loop):
                self._collect(stmt.body, loops + (stmt,), positions + (pos,))

    def statement_of(self, assign: ir.Assign) -> Statement:
        """The statement of an Assign node of *this model's program object* (by identity:
        a Dependences fetched from the value-keyed cache may hold an equal program's nodes,
        so match by textual position there)."""
        for s in self.statements:
            if s.assign is assign:
                return s
        raise KeyError(assign)

    # ------------------------------------------------------------------ text builders

    def domain_text(self, stmt: Statement, suffix: str = "") -> str:
        """Constraints (ISL text) of the iteration domain, iterators renamed with suffix."""
        parts = []
        seen = []
        for loop in stmt.loops:
            seen.append(loop.iterator)
            v = isl_name(loop.iterator) + suffix
            lo = self._bound(loop.lo, seen[:-1], suffix)
            hi = self._bound(loop.hi, seen[:-1], suffix)
            parts.append(f"{lo} <= {v} < {hi}")
        return " and ".join(parts) if parts else "true"

    def bound_text(self, expr, iterators, suffix: str = "") -> str:
        """ISL text of a loop bound over these enclosing iterators, renamed with suffix."""
        return self._bound(expr, list(iterators), suffix)

    def _bound(self, expr, iterators, suffix):
        text = affine_text(expr, self.sizes, iterators, allow_minmax=True)
        return _rename(text, iterators, suffix)

    def index_texts(self, stmt: Statement, access: ir.Access, suffix: str = "") -> list:
        return [_rename(affine_text(e, self.sizes, stmt.iterators), stmt.iterators, suffix)
                for e in access.indices]

    def schedule_texts(self, stmt: Statement, suffix: str = "") -> list:
        out = []
        for k, loop in enumerate(stmt.loops):
            out.append(str(stmt.positions[k]))
            out.append(isl_name(loop.iterator) + suffix)
        out.append(str(stmt.positions[len(stmt.loops)]))
        out.extend(["0"] * (2 * self.depth + 1 - len(out)))
        return out

    # ------------------------------------------------------------------ isl objects

    def domain(self, stmt: Statement) -> isl.Set:
        return isl.Set(f"{{ {stmt.name}[{stmt.vars_text()}] : {self.domain_text(stmt)} }}")

    def access_map(self, stmt: Statement, access: ir.Access) -> isl.Map:
        idx = self.index_texts(stmt, access, "")
        outs = ", ".join(f"e{k}" for k in range(len(idx)))
        eqs = " and ".join(f"e{k} = {t}" for k, t in enumerate(idx))
        cond = self.domain_text(stmt) + (f" and {eqs}" if eqs else "")
        return isl.Map(f"{{ {stmt.name}[{stmt.vars_text()}] -> {access.array}[{outs}] : {cond} }}")


def _rename(text: str, iterators, suffix: str) -> str:
    if not suffix:
        return text
    names = {isl_name(i) for i in iterators}
    return re.sub(r"\bv_[A-Za-z_0-9]+\b",
                  lambda m: m.group(0) + suffix if m.group(0) in names else m.group(0), text)


def lex_before_text(a: list, b: list) -> str:
    """ISL text of `a <lex b` for two equal-length lists of ISL expressions; positions
    that are integer literals on both sides are decided here, keeping the text short."""
    terms, prefix = [], []
    for x, y in zip(a, b):
        if x.lstrip("-").isdigit() and y.lstrip("-").isdigit():
            if int(x) < int(y):
                terms.append(prefix or ["true"])
                break
            if int(x) > int(y):
                break
            continue
        terms.append(prefix + [f"{x} < {y}"])
        prefix = prefix + [f"{x} = {y}"]
    if not terms:
        return "false"
    return "(" + " or ".join("(" + " and ".join(t) + ")" for t in terms) + ")"


def point_values(point: isl.Point, n: int) -> list:
    return [point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n)]

"""IR -> canonical text. Guarantees parse(print_program(p)) == p for every Program whose
names are valid identifiers, and print_program(parse(t)) is a fixed point.

It also owns the names that actions use for the lines it prints (``line_refs``): a loop is
named by its iterator, a local by its name, and an assignment or a prefetch by ``sN``, N
counting the assignments and prefetches of the program in textual order from 0
(``statement_ref``, the one definition of that rule)."""
from __future__ import annotations

import math
import re
from typing import NamedTuple

from . import ir

INDENT = "  "
_PREC = {"<": 1, "<=": 1, ">": 1, ">=": 1, "==": 1, "!=": 1,
         "+": 2, "-": 2, "*": 3, "/": 3, "//": 3, "%": 3}
_UNARY = 4
_ATOM = 5


def _prec(expr) -> int:
    if isinstance(expr, ir.BinOp):
        return _PREC[expr.op]
    if isinstance(expr, ir.Neg):
        return _UNARY
    if isinstance(expr, ir.Const) and (expr.value < 0 or (isinstance(expr.value, float)
                                                           and math.copysign(1, expr.value) < 0)):
        return _UNARY
    return _ATOM


def _number(value) -> str:
    if isinstance(value, bool):
        raise TypeError("boolean constants are not part of the IR")
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        raise ValueError("NaN constants are not part of the IR")
    text = repr(float(value))
    return text


def print_expr(expr) -> str:
    """The canonical text of an expression, with the fewest parentheses that keep its tree."""
    if isinstance(expr, ir.Const):
        return _number(expr.value)
    if isinstance(expr, ir.Var):
        return expr.name
    if isinstance(expr, ir.Access):
        if not expr.indices:
            return expr.array
        return f"{expr.array}[{', '.join(print_expr(i) for i in expr.indices)}]"
    if isinstance(expr, ir.Call):
        return f"{expr.func}({', '.join(print_expr(a) for a in expr.args)})"
    if isinstance(expr, ir.Neg):
        inner = expr.operand
        text = print_expr(inner)
        # a bare number after '-' would be folded into a negative constant by the parser
        if isinstance(inner, ir.Const) or _prec(inner) < _UNARY:
            text = f"({text})"
        return f"-{text}"
    if isinstance(expr, ir.BinOp):
        p = _PREC[expr.op]
        lhs, rhs = print_expr(expr.lhs), print_expr(expr.rhs)
        if p == 1:  # comparisons do not chain
            if _prec(expr.lhs) <= 1:
                lhs = f"({lhs})"
            if _prec(expr.rhs) <= 1:
                rhs = f"({rhs})"
        else:
            if _prec(expr.lhs) < p:
                lhs = f"({lhs})"
            if _prec(expr.rhs) <= p:
                rhs = f"({rhs})"
        if expr.op == "*" and isinstance(expr.lhs, ir.Const) and isinstance(expr.lhs.value, int) \
                and expr.lhs.value >= 0 and isinstance(expr.rhs, ir.Var):
            return f"{lhs}*{rhs}"  # index style: 32*i0
        return f"{lhs} {expr.op} {rhs}"
    raise TypeError(f"not an expression: {expr!r}")


def print_range(lo, hi) -> str:
    """One dimension of a prefetch box: ``lo..hi``, or ``e`` when hi is ``e + 1`` (the
    parser reads ``e`` back as that same pair)."""
    if hi == ir.BinOp("+", lo, ir.Const(1)):
        return print_expr(lo)
    return f"{print_expr(lo)}..{print_expr(hi)}"


def _type(dtype: str, dims: tuple) -> str:
    if not dims:
        return dtype
    return f"{dtype}[{', '.join(print_expr(d) for d in dims)}]"


def print_stmt(stmt, depth: int = 0) -> list:
    """The canonical lines of one statement (a loop includes its body)."""
    pad = INDENT * depth
    if isinstance(stmt, ir.Assign):
        return [f"{pad}{print_expr(stmt.target)} {stmt.op} {print_expr(stmt.value)}"]
    if isinstance(stmt, ir.Local):
        space = f" in {stmt.space}" if stmt.space else ""
        return [f"{pad}local {stmt.name}: {_type(stmt.dtype, stmt.dims)}{space}"]
    if isinstance(stmt, ir.Prefetch):
        box = ", ".join(print_range(lo, hi) for lo, hi in stmt.ranges)
        return [f"{pad}prefetch {stmt.array}[{box}]"]
    if isinstance(stmt, ir.Loop):
        annots = "".join(f" {a}" for a in stmt.annotations)
        lines = [f"{pad}for {stmt.iterator} in {print_expr(stmt.lo)}..{print_expr(stmt.hi)}{annots}:"]
        for s in stmt.body:
            lines.extend(print_stmt(s, depth + 1))
        return lines
    raise TypeError(f"not a statement: {stmt!r}")


def print_header(program: ir.Program) -> list:
    lines = [f"# {d}" if d else "#" for d in program.doc]
    sizes = ", ".join(f"{n} = {v}" for n, v in program.sizes)
    lines.append(f"kernel {program.name}({sizes})")
    width = max((len(d.kind) for d in program.arrays), default=0)
    for d in program.arrays:
        lines.append(f"{d.kind.ljust(width)} {d.name}: {_type(d.dtype, d.dims)}")
    return lines


def print_program(program: ir.Program) -> str:
    """The canonical text of a whole kernel, ending with a newline."""
    lines = print_header(program)
    if program.body:
        lines.append("")
    for stmt in program.body:
        lines.extend(print_stmt(stmt))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- line refs

STATEMENT_REF = re.compile(r"s(\d+)")


def statement_ref(n: int) -> str:
    """The name of the n-th assignment or prefetch (from 0, textual order): ``sN``."""
    return f"s{n}"


def statement_number(ref: str):
    """N for a name ``sN``, else None (the inverse of statement_ref)."""
    m = STATEMENT_REF.fullmatch(ref)
    return int(m.group(1)) if m else None


class StatementLine(NamedTuple):
    """A statement of a program and where print_program(program) puts it."""
    line: int               # 1-based line of the statement (a loop's header)
    stmt: object            # the ir.Loop, ir.Assign, ir.Prefetch or ir.Local
    ref: str                # its name: the iterator, the local's name, or sN
    parents: tuple          # the enclosing loops, outermost first


def statement_lines(program: ir.Program) -> list:
    """Every statement of the program in textual order with its line in print_program(program)
    and its name; computed from the tree, without printing or parsing (the printer puts the
    doc comments, the kernel line, one line per array, a blank line, then one line per
    statement, a loop's header before its body)."""
    line = len(program.doc) + 1 + len(program.arrays) + (1 if program.body else 0)
    out, n = [], 0

    def walk(body, parents):
        nonlocal line, n
        for stmt in body:
            line += 1
            if isinstance(stmt, ir.Loop):
                out.append(StatementLine(line, stmt, stmt.iterator, parents))
                walk(stmt.body, parents + (stmt,))
            elif isinstance(stmt, (ir.Assign, ir.Prefetch)):
                out.append(StatementLine(line, stmt, statement_ref(n), parents))
                n += 1
            elif isinstance(stmt, ir.Local):
                out.append(StatementLine(line, stmt, stmt.name, parents))
    walk(program.body, ())
    return out


def line_refs(program: ir.Program) -> dict:
    """{line of print_program(program): name} for every loop header (its iterator), local
    (its name), assignment and prefetch (``sN``): the names that actions use."""
    return {s.line: s.ref for s in statement_lines(program)}

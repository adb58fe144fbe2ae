"""Canonical affine expressions: the simplifier that keeps index text readable after
transformations substitute iterators (`i` -> `32*i0 + i1`).

An integer expression is read as a linear form: terms (a Var or an opaque atom such as
`(N + 31) // 32`, `x % 4`, `min(..)`) with integer coefficients plus a constant. Terms keep
the order in which they first appear, so `A[i + 1]` with i -> 32*i0 + i1 prints as
`A[32*i0 + i1 + 1]`. `simplify` guarantees an expression equal to its input for every
value of its variables; expressions that are not linear (a product of two variables)
are rebuilt with simplified children only.
"""
from __future__ import annotations

from . import ir


class _NotLinear(Exception):
    pass


def _add(a: dict, b: dict, scale: int = 1) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + scale * v
    return out


def linear(expr) -> dict:
    """expr as {term: coefficient} with the constant under key 1; raises _NotLinear."""
    if isinstance(expr, ir.Const):
        if not isinstance(expr.value, int):
            raise _NotLinear()
        return {1: expr.value}
    if isinstance(expr, ir.Var):
        return {expr: 1}
    if isinstance(expr, ir.Neg):
        return {k: -v for k, v in linear(expr.operand).items()}
    if isinstance(expr, ir.BinOp):
        if expr.op in ("+", "-"):
            return _add(linear(expr.lhs), linear(expr.rhs), 1 if expr.op == "+" else -1)
        if expr.op == "*":
            a, b = linear(expr.lhs), linear(expr.rhs)
            if set(a) <= {1}:
                return {k: a.get(1, 0) * v for k, v in b.items()}
            if set(b) <= {1}:
                return {k: b.get(1, 0) * v for k, v in a.items()}
            raise _NotLinear()
        if expr.op in ("//", "%"):
            d = linear(expr.rhs)
            if set(d) - {1} or d.get(1, 0) <= 0:
                raise _NotLinear()
            div = d[1]
            inner = linear(expr.lhs)
            if set(inner) <= {1}:
                c = inner.get(1, 0)
                return {1: c // div if expr.op == "//" else c % div}
            if div == 1:
                return inner if expr.op == "//" else {1: 0}
            if expr.op == "//" and all(k == 1 or v % div == 0 for k, v in inner.items()) \
                    and inner.get(1, 0) % div == 0:
                return {k: v // div for k, v in inner.items()}
            atom = ir.BinOp(expr.op, from_linear(inner), ir.Const(div))
            return {atom: 1}
        raise _NotLinear()
    if isinstance(expr, ir.Call) and expr.func in ("min", "max"):
        args = tuple(simplify(a) for a in expr.args)
        if args[0] == args[1]:
            return linear(args[0])
        return {ir.Call(expr.func, args): 1}
    raise _NotLinear()


def linear_or_none(expr):
    """expr as a linear form (see `linear`), or None when it is not linear."""
    try:
        return linear(expr)
    except _NotLinear:
        return None


def _merge_div_mod(form: dict) -> dict:
    """Rewrite c*d*(x // d) + c*(x % d) into c*x (the shape a merge of a split leaves)."""
    for key in list(form):
        if not (isinstance(key, ir.BinOp) and key.op == "%"):
            continue
        x, d = key.lhs, key.rhs.value
        div = ir.BinOp("//", x, ir.Const(d))
        c = form.get(key, 0)
        if c and form.get(div, 0) == c * d:
            del form[key]
            del form[div]
            form = _add(form, linear(x), c)
    return form


def from_linear(form: dict):
    """Rebuild an IR expression from a linear form, terms in insertion order, constant last."""
    form = _merge_div_mod(dict(form))
    terms = [(k, v) for k, v in form.items() if k != 1 and v != 0]
    const = form.get(1, 0)
    expr = None
    for term, coeff in terms:
        mag = abs(coeff)
        if isinstance(term, ir.BinOp) and mag != 1:
            piece = ir.BinOp("*", ir.Const(mag), term)
        else:
            piece = term if mag == 1 else ir.BinOp("*", ir.Const(mag), term)
        if expr is None:
            expr = piece if coeff > 0 else (ir.Neg(piece) if mag == 1 else
                                             ir.BinOp("*", ir.Const(-mag), term))
        else:
            expr = ir.BinOp("+" if coeff > 0 else "-", expr, piece)
    if expr is None:
        return ir.Const(const)
    if const:
        expr = ir.BinOp("+" if const > 0 else "-", expr, ir.Const(abs(const)))
    return expr


def simplify(expr):
    """An equal, canonical expression (see module docstring)."""
    try:
        return from_linear(linear(expr))
    except _NotLinear:
        pass
    if isinstance(expr, ir.BinOp):
        return ir.BinOp(expr.op, simplify(expr.lhs), simplify(expr.rhs))
    if isinstance(expr, ir.Neg):
        return ir.Neg(simplify(expr.operand))
    if isinstance(expr, ir.Call):
        return ir.Call(expr.func, tuple(simplify(a) for a in expr.args))
    if isinstance(expr, ir.Access):
        return ir.Access(expr.array, tuple(simplify(i) for i in expr.indices))
    return expr


def substitute_index(expr, mapping: dict):
    """Substitute iterators (name -> Expr) in a value expression and simplify every index."""
    def fn(node):
        if isinstance(node, ir.Var) and node.name in mapping:
            return mapping[node.name]
        if isinstance(node, ir.Access):
            return ir.Access(node.array, tuple(simplify(i) for i in node.indices), node.loc)
        return node
    return ir.map_expr(expr, fn)


def add(a, b):
    return simplify(ir.BinOp("+", a, b))


def sub(a, b):
    return simplify(ir.BinOp("-", a, b))


def mul(c: int, a):
    return simplify(ir.BinOp("*", ir.Const(c), a))

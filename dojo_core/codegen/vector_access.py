"""Where a ``vector`` loop's accesses go: the coefficient of its iterator in an index
(``coef``, ``flat_coef``: unit stride, invariant, or neither) and the reductions into
elements invariant in the loop (``reduction_plan``), for ``c_vector`` and ``c``."""
from __future__ import annotations

from .. import ir
from ..poly import apart_in_loop, const_value


def coef(expr, v: str, sizes: dict):
    """The coefficient of iterator v in an integer expression affine in v (other iterators
    may appear anywhere v does not), or None."""
    if v not in ir.var_names(expr):
        return 0
    if isinstance(expr, ir.Var):
        return 1
    if isinstance(expr, ir.Neg):
        c = coef(expr.operand, v, sizes)
        return None if c is None else -c
    if isinstance(expr, ir.BinOp) and expr.op in ("+", "-"):
        a, b = coef(expr.lhs, v, sizes), coef(expr.rhs, v, sizes)
        if a is None or b is None:
            return None
        return a + b if expr.op == "+" else a - b
    if isinstance(expr, ir.BinOp) and expr.op == "*":
        for const, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            k = const_value(const, sizes)
            if k is not None:
                c = coef(other, v, sizes)
                return None if c is None else k * c
    return None


def flat_coef(buf, indices, v: str, sizes: dict):
    """The coefficient of v in the flattened (row-major) index of an access, or None."""
    if buf.scalar_var or not indices:
        return 0
    dims = [const_value(d, sizes) for d in buf.dims]
    total, stride = 0, 1
    for k in range(len(indices) - 1, -1, -1):
        c = coef(indices[k], v, sizes)
        if c is None:
            return None
        total += c * stride
        stride *= dims[k] if dims[k] is not None else 0
    return total


def _touched(stmt: ir.Assign) -> list:
    return [stmt.target] + [a for a in ir.walk_expr(stmt.value) if isinstance(a, ir.Access)]


def reduction_plan(gen, loop: ir.Loop):
    """[(position, assign)] of the reductions of a vector loop into elements invariant in
    it; None when a reduction's target cannot be shown invariant or varying, when an
    invariant target element is touched by another statement of the loop (other elements of
    its array may be, where ``poly.apart_in_loop`` proves them distinct), or when the reduction's
    value reads its own target element (other elements of its array it may read: vectorize
    proved that the loop never updates them)."""
    plan = []
    body = loop.body
    for k, stmt in enumerate(body):
        if not isinstance(stmt, ir.Assign):
            return None
        buf = gen.ex.buffers[stmt.target.array]
        c = flat_coef(buf, stmt.target.indices, loop.iterator, gen.sizes)
        if c is None and stmt.op != "=":
            return None
        if c == 0:
            if stmt.op == "=":
                return None
            for j, other in enumerate(body):
                accesses = _touched(other)[1:] if j == k else _touched(other)
                if j != k and any(a.array == stmt.target.array and not apart_in_loop(
                        a, stmt.target, loop.iterator, gen.sizes) for a in accesses):
                    return None
                if j == k and any(a == stmt.target for a in accesses):
                    return None
            plan.append((k, stmt))
    return plan

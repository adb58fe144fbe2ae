"""Static part of the interpreter's vectorisation rule (see ``dojo_core.interp``).

* ``region_chain(loop)``: the perfect nest starting at ``loop`` (each body exactly one loop)
  and the statements of its innermost body, when that body is a non-empty sequence of
  assignments; otherwise ``(chain, None)``.
* ``region_plan(...)``: for every array written in such a region, the single index tuple
  through which the region touches it, and how the write is vectorised: ``"at"`` (a private
  reduction, done with ``ufunc.at`` in sequential order) or ``"inj"`` (an elementwise update,
  legal only when the write is injective over the iteration set). ``None`` when some array
  written in the region is touched through two different index tuples: never vectorised.
* ``statically_injective(...)``: a sufficient proof that an index tuple is injective over
  the region iterators (the affine parts have full column rank), so no runtime check is due.
"""
from __future__ import annotations

from fractions import Fraction

from .. import ir
from .evaluate import eval_int


def uses_vars(expr, names) -> bool:
    """True when expr mentions one of ``names`` as a variable."""
    return any(isinstance(e, ir.Var) and e.name in names for e in ir.walk_expr(expr))


def region_chain(loop: ir.Loop):
    chain = [loop]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.Loop):
        chain.append(chain[-1].body[0])
    body = chain[-1].body
    if all(isinstance(s, (ir.Assign, ir.Local)) for s in body) \
            and any(isinstance(s, ir.Assign) for s in body):
        return chain, tuple(body)
    return chain, None


def _accesses(stmt: ir.Assign):
    yield stmt.target
    for e in ir.walk_expr(stmt.value):
        if isinstance(e, ir.Access):
            yield e
    for idx in stmt.target.indices:
        for e in ir.walk_expr(idx):
            if isinstance(e, ir.Access):
                yield e


def region_plan(gen, chain, stmts, scope):
    inner = {"arrays": dict(scope["arrays"]),
             "iters": scope["iters"] | {lp.iterator for lp in chain}}
    for s in stmts:
        if isinstance(s, ir.Local):
            arr = inner["arrays"][s.name] = gen.local_array(s, inner, private="p")
            if not arr.fixed:
                return None
    stmts = [s for s in stmts if isinstance(s, ir.Assign)]
    written = []
    for s in stmts:
        if s.target.array not in written and not inner["arrays"][s.target.array].private:
            written.append(s.target.array)
    vset = frozenset(lp.iterator for lp in chain)
    plan = {}
    for x in written:
        touching = [s for s in stmts if any(a.array == x for a in _accesses(s))]
        indices = {a.indices for s in touching for a in _accesses(s) if a.array == x}
        if len(indices) != 1:
            return None
        mode = "inj"
        if len(touching) == 1:
            s = touching[0]
            arr = gen.array(inner, x)
            reads_x = any(a.array == x for a in ir.walk_expr(s.value) if isinstance(a, ir.Access))
            if s.op in ir.REDUCTION_OPS and not reads_x and arr.dtype != "bf16":
                _, t = gen.value(s.value, arr.ctx, inner, vset)
                if t == arr.np:         # (never for i8: its values are int32)
                    mode = "at"
        plan[x] = (next(iter(indices)), mode)
    return plan


def _linear(expr, names, sizes):
    """Coefficients of ``names`` in expr when expr is affine in them (other variables and
    non-linear terms free of them count as constants); None otherwise."""
    if not uses_vars(expr, names):
        return {}
    if isinstance(expr, ir.Var):
        return {expr.name: 1}
    if isinstance(expr, ir.Neg):
        inner = _linear(expr.operand, names, sizes)
        return None if inner is None else {k: -v for k, v in inner.items()}
    if isinstance(expr, ir.BinOp) and expr.op in ("+", "-"):
        lhs, rhs = _linear(expr.lhs, names, sizes), _linear(expr.rhs, names, sizes)
        if lhs is None or rhs is None:
            return None
        sign = 1 if expr.op == "+" else -1
        out = dict(lhs)
        for k, v in rhs.items():
            out[k] = out.get(k, 0) + sign * v
        return out
    if isinstance(expr, ir.BinOp) and expr.op == "*":
        for const, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if not uses_vars(const, names):
                try:
                    factor = eval_int(const, sizes)
                except (ValueError, KeyError, ZeroDivisionError):
                    return None
                lin = _linear(other, names, sizes)
                return None if lin is None else {k: factor * v for k, v in lin.items()}
    return None


def _rank(rows) -> int:
    rows = [[Fraction(v) for v in row] for row in rows]
    rank, ncols = 0, len(rows[0]) if rows else 0
    for col in range(ncols):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][col] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for r in range(len(rows)):
            if r != rank and rows[r][col] != 0:
                q = rows[r][col] / rows[rank][col]
                rows[r] = [a - q * b for a, b in zip(rows[r], rows[rank])]
        rank += 1
    return rank


def statically_injective(gen, indices, names) -> bool:
    rows = []
    for e in indices:
        lin = _linear(e, set(names), gen.sizes)
        if lin:
            rows.append([lin.get(n, 0) for n in names])
    return bool(rows) and _rank(rows) == len(names)

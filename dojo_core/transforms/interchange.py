"""interchange L M: swap two perfectly nested loops (M is the only statement of L's body).

    for j in 0..M:                   for k in 0..K:
      for k in 0..K:        ==>        for j in 0..M:
        C[i, j] += A[i, k] * B[k, j]     C[i, j] += A[i, k] * B[k, j]

Legal when M's bounds do not depend on L and no dependence has direction (<, >) on
(L, M) within one iteration of the loops around L. Annotated loops are not moved.
"""
from __future__ import annotations

from .. import ir
from ..deps import dependences, same
from .base import Transformation
from .util import find_loop, loops_around, replace_at, uses_var


class Interchange(Transformation):
    name = "interchange"
    usage = "interchange OUTER INNER"

    def parse(self, words):
        if len(words) != 2:
            raise self.usage_error()
        return tuple(words)

    def format(self, params):
        return f"interchange {params[0]} {params[1]}"

    def candidates(self, program):
        for loop in ir.loops(program):
            if len(loop.body) == 1 and isinstance(loop.body[0], ir.Loop):
                yield loop.iterator, loop.body[0].iterator

    def check(self, program, params):
        outer_name, inner_name = params
        outer, path = find_loop(program, outer_name)
        if outer is None:
            return f"there is no loop '{outer_name}'"
        inner, _ = find_loop(program, inner_name)
        if inner is None:
            return f"there is no loop '{inner_name}'"
        if not (len(outer.body) == 1 and outer.body[0] is inner):
            return (f"loops '{outer_name}' and '{inner_name}' are not perfectly nested "
                    f"('{inner_name}' must be the only statement in '{outer_name}')")
        if outer.annotations or inner.annotations:
            return "annotated loops are not interchanged; interchange before annotating"
        if uses_var([ir.Assign(ir.Access("_", ()), "=", inner.lo),
                     ir.Assign(ir.Access("_", ()), "=", inner.hi)], outer_name):
            return f"the bounds of '{inner_name}' depend on '{outer_name}'"
        deps = dependences(program)
        stmts = deps.inside(inner_name)
        around = [l.iterator for l in loops_around(program, path)]
        o, i = outer_name, inner_name
        cond = f"{same(around)} and v_{o}_s < v_{o}_t and v_{i}_s > v_{i}_t"
        if deps.exists(stmts, stmts, lambda s, t: cond):
            return (f"a dependence with direction (<, >) on ({o}, {i}) would be reversed")
        return None

    def apply(self, program, params):
        outer, path = find_loop(program, params[0])
        inner = outer.body[0]
        new_inner = ir.Loop(outer.iterator, outer.lo, outer.hi, outer.annotations, inner.body)
        new_outer = ir.Loop(inner.iterator, inner.lo, inner.hi, inner.annotations, (new_inner,))
        return replace_at(program, path, [new_outer])


INTERCHANGE = Interchange()

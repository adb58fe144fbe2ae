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
from .base import LoopPair
from .util import find_loop, loops_around, replace_at


class Interchange(LoopPair):
    name = "interchange"
    done = "interchanged"

    def check(self, program, params):
        outer_name, inner_name = params
        pair = self.rectangular_pair(program, outer_name, inner_name)
        if isinstance(pair, str):
            return pair
        outer, path, inner = pair
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

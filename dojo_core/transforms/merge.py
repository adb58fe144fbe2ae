"""merge L0 L1: collapse two perfectly nested loops with constant extents into one loop.

    for i0 in 0..N // 32:              for i in 0..N:
      for i1 in 0..32:        ==>        C[i] = A[i] + 1
        C[32*i0 + i1] = A[32*i0 + i1] + 1

L1 must be the only statement of L0's body, both loops must have extents that are
constant at the program's sizes (E0 and E1 > 0) and no annotations. The new loop runs
0..E0*E1 and L0 -> lo0 + l // E1, L1 -> lo1 + l % E1 (simplified, so a merge undoes a
split). It is named by the longest common base of the two names when both are
`<base><digits>` and the base is free (`i0`, `i1` -> `i`; `j20`, `j21` -> `j2`), else by
the two names joined (`i`, `j` -> `ij`), made fresh if taken. Always legal: the instances
run in the same order.
"""
from __future__ import annotations

import os

from .. import ir
from ..affine import add, simplify, sub
from ..poly import const_value
from .base import LoopPair
from .util import declared_names, extent, find_loop, fresh, replace_at, substitute_stmts


def merged_name(program, outer: str, inner: str) -> str:
    """The longest free common prefix `base` with outer = base<digits> and inner =
    base<digits> (so a merge undoes a split's names), else outer + inner made fresh."""
    taken = declared_names(program) - {outer, inner}
    common = os.path.commonprefix([outer, inner])
    for n in range(len(common), 0, -1):
        base, ra, rb = outer[:n], outer[n:], inner[n:]
        if ra.isdigit() and rb.isdigit() and base not in taken:
            return base
    name = outer + inner
    return name if name not in taken else fresh(taken, name)


def _product(ext0, ext1, sizes):
    """ext0 * ext1 as a readable expression: c * (X // c) is X when c divides X here."""
    value = simplify(ir.BinOp("*", ext0, ext1))
    c = const_value(ext1, sizes)
    if isinstance(ext0, ir.BinOp) and ext0.op == "//" and const_value(ext0.rhs, sizes) == c:
        x = const_value(ext0.lhs, sizes)
        if x is not None and c and x % c == 0:
            return ext0.lhs
    return value


class Merge(LoopPair):
    name = "merge"
    done = "merged"

    def check(self, program, params):
        pair = self.pair(program, *params)
        if isinstance(pair, str):
            return pair
        outer, _, inner = pair
        sizes = program.size_values
        for loop in (outer, inner):
            n = extent(loop, sizes)
            if n is None:
                return f"loop '{loop.iterator}' has no constant extent"
            if n == 0:
                return f"loop '{loop.iterator}' runs zero times"
        return None

    def apply(self, program, params):
        outer, path = find_loop(program, params[0])
        inner = outer.body[0]
        sizes = program.size_values
        new = merged_name(program, outer.iterator, inner.iterator)
        e1 = extent(inner, sizes)
        ext0, ext1 = sub(outer.hi, outer.lo), sub(inner.hi, inner.lo)
        var = ir.Var(new)
        mapping = {
            outer.iterator: add(outer.lo, ir.BinOp("//", var, ir.Const(e1))),
            inner.iterator: add(inner.lo, ir.BinOp("%", var, ir.Const(e1))),
        }
        body = substitute_stmts(inner.body, mapping)
        loop = ir.Loop(new, ir.Const(0), _product(ext0, ext1, sizes), (), body)
        return replace_at(program, path, [loop])


MERGE = Merge()

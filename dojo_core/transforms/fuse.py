"""fuse L M: merge two adjacent sibling loops with equal bounds into one loop (L's name).

    for i in 0..N:                     for i in 0..N:
      B[i] = A[i] * 2         ==>        B[i] = A[i] * 2
    for i2 in 0..N:                      C[i] = B[i] + 1
      C[i2] = B[i2] + 1

M must directly follow L in the same body, both with the same bounds (compared as
simplified expressions; as siblings, neither can use the other's iterator) and without
annotations; M's iterator becomes L's in M's body (loops nested in M keep their names).
Fusion interleaves the iterations, so it is legal iff no dependence goes from a statement
of L at iteration l to a statement of M at an earlier iteration m < l (within one
iteration of the loops around both): with
`C[i2] = B[i2 + 1]` above, iteration i of the fused loop would read B[i + 1] before it is
written, so that fusion is refused; `B[i2]` or `B[i2 - 1]` fuse.
"""
from __future__ import annotations

from .. import ir
from ..affine import simplify
from ..deps import dependences, same
from .base import Transformation
from .util import (body_at, find_loop, locate, loops_around, replace_at, substitute_stmts,
                   with_body)


def same_bounds(a, b) -> bool:
    return simplify(a.lo) == simplify(b.lo) and simplify(a.hi) == simplify(b.hi)


class Fuse(Transformation):
    name = "fuse"
    grammar = "LOOP NEXT_LOOP"

    def candidates(self, program):
        def go(body):
            for a, b in zip(body, body[1:]):
                if isinstance(a, ir.Loop) and isinstance(b, ir.Loop) and same_bounds(a, b):
                    yield a.iterator, b.iterator
            for s in body:
                if isinstance(s, ir.Loop):
                    yield from go(s.body)
        return list(go(program.body))

    def check(self, program, params):
        first_name, second_name = params
        found = locate(program, loops=params)
        if isinstance(found, str):
            return found
        (first, path), (second, path2) = found
        if path2[:-1] != path[:-1] or path2[-1] != path[-1] + 1:
            return (f"loop '{second_name}' does not directly follow loop '{first_name}' "
                    "in the same body")
        if first.annotations or second.annotations:
            return "annotated loops are not fused; fuse before annotating"
        if not same_bounds(first, second):
            return f"loops '{first_name}' and '{second_name}' do not have the same bounds"
        deps = dependences(program)
        around = [l.iterator for l in loops_around(program, path)]
        cond = f"{same(around)} and v_{first_name}_s > v_{second_name}_t"
        if deps.exists(deps.inside(first_name), deps.inside(second_name), lambda s, t: cond):
            return (f"a dependence from an iteration of '{first_name}' to an earlier iteration of "
                    f"'{second_name}' would be reversed by the fusion")
        return None

    def apply(self, program, params):
        first, path = find_loop(program, params[0])
        body = body_at(program, path)
        second = body[path[-1] + 1]
        moved = substitute_stmts(second.body, {second.iterator: ir.Var(first.iterator)})
        fused = with_body(first, first.body + tuple(moved))
        program = replace_at(program, path, [fused])
        return replace_at(program, path[:-1] + [path[-1] + 1], [])


FUSE = Fuse()

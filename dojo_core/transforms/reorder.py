"""reorder S T: swap two adjacent statements of one body (assignments `sN` or loops, named
by their iterator).

    for i in 0..N:                     for i in 0..N:
      B[i] = A[i] + 1         ==>        C[i] = A[i] * 2
      C[i] = A[i] * 2                    B[i] = A[i] + 1

T must follow S in the same body with nothing but local declarations between them; the
declarations stay where they are, so T may not use a local declared between the two.
Within one iteration of the loops around them every instance of S (and of the statements
nested in S) then runs after every instance of T, so it is legal iff no dependence links
an instance of S to an instance of T in the same iteration of the loops around them.
"""
from __future__ import annotations

from .. import ir
from ..deps import dependences, same
from .base import Transformation
from .fission import statements_at, stmt_refs, uses_array
from .util import (body_at, find_ref, locate, loops_around, replace_at, with_body,
                   with_program_body)


def _neighbours(body):
    """(k, m) index pairs of statements with only Local declarations (and prefetches, which
    stay where they are) between them."""
    idx = [k for k, s in enumerate(body) if isinstance(s, (ir.Assign, ir.Loop))]
    return list(zip(idx, idx[1:]))


class Reorder(Transformation):
    name = "reorder"
    grammar = "STATEMENT NEXT_STATEMENT"

    def candidates(self, program):
        refs = stmt_refs(program)
        out = []

        def go(body):
            for k, m in _neighbours(body):
                if refs[id(body[k])] and refs[id(body[m])]:
                    out.append((refs[id(body[k])], refs[id(body[m])]))
            for s in body:
                if isinstance(s, ir.Loop):
                    go(s.body)
        go(program.body)
        return out

    def check(self, program, params):
        a_ref, b_ref = params
        found = locate(program, statements=params)
        if isinstance(found, str):
            return found
        (a, apath), (b, bpath) = found
        if list(apath[:-1]) != list(bpath[:-1]) or (apath[-1], bpath[-1]) not in \
                _neighbours(body_at(program, apath)):
            return f"'{b_ref}' does not directly follow '{a_ref}' in the same body"
        body = body_at(program, apath)
        for s in body[apath[-1] + 1:bpath[-1]]:
            if isinstance(s, ir.Local) and uses_array([b], s.name):
                return f"'{b_ref}' uses the local '{s.name}' declared between the two statements"
        deps = dependences(program)
        around = same([l.iterator for l in loops_around(program, apath)])
        if deps.exists(statements_at(deps, apath), statements_at(deps, bpath), lambda s, t: around):
            return f"'{a_ref}' and '{b_ref}' depend on each other (they touch a common element)"
        return None

    def apply(self, program, params):
        a, apath = find_ref(program, params[0])
        b, bpath = find_ref(program, params[1])
        body = body_at(program, apath)
        k, m = apath[-1], bpath[-1]
        new = body[:k] + (b,) + body[k + 1:m] + (a,) + body[m + 1:]
        parent = apath[:-1]
        if not parent:
            return with_program_body(program, new)
        return replace_at(program, parent, [with_body(loops_around(program, apath)[-1], new)])


REORDER = Reorder()

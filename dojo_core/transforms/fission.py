"""fission L after S: split the body of loop L after its statement S into two loops.

    for i in 0..N:                     for i in 0..N:
      for j in 0..M:                     for j in 0..M:
        C[i, j] = 0           ==>          C[i, j] = 0
        for k in 0..K:                   for j2 in 0..M:
          C[i, j] += ...                   for k in 0..K:
                                             C[i, j2] += ...

S (an assignment `sN` or a loop, named by its iterator) sits directly in L's body and is
not its last statement. L keeps the statements up to and including S; a new loop with the
same bounds and annotations and a fresh iterator (`j` -> `j2`; `i1` -> `i2`, the trailing
digits of the name dropped before numbering) runs the rest after it.
Loops nested in the second part move whole, so they keep their (kernel-unique) names.
Afterwards every instance of the first part runs before every instance of the second
(within one iteration of the loops around L), so it is legal iff no dependence goes from
a statement of the second part at iteration l to one of the first part at a later
iteration l' > l (a backward carried dependence). A local declared in the first part and
used only in the second moves with its uses (its declaration opens the new loop's body:
each iteration of L had its own copy, so has each iteration of the new loop); one used on
both sides refuses.

    for i in 0..N:                     for i in 0..N:
      local m: f32                       C[i] = A[i] * 2
      C[i] = A[i] * 2         ==>      for i2 in 0..N:
      m = C[i] + 1                       local m: f32
      B[i] = m * m                       m = C[i2] + 1
                                         B[i2] = m * m
"""
from __future__ import annotations

import re

from .. import ir
from ..deps import dependences, same
from ..printer import statement_ref
from .base import Transformation
from .util import (declared_names, find_loop, find_ref, fresh, locate, loops_around, replace_at,
                   substitute_stmts, with_body)


def statements_at(deps, path) -> list:
    """The model statements nested in (or equal to) the statement at path."""
    prefix = tuple(path)
    return [s for s in deps.statements if s.positions[:len(prefix)] == prefix]


def uses_array(stmts, name: str) -> bool:
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ir.Assign):
            exprs = [s.target, s.value]
        elif isinstance(s, ir.Loop):
            exprs = [s.lo, s.hi]
        else:
            continue
        for e in exprs:
            if any(isinstance(n, ir.Access) and n.array == name for n in ir.walk_expr(e)):
                return True
    return False


def stmt_refs(program) -> dict:
    """id(statement) -> reference text, for every Assign, Prefetch and Loop of the program. An
    assignment whose `sN` is also a loop iterator cannot be named (find_ref finds the
    loop first) and maps to None."""
    out, n = {}, 0
    stmts = list(ir.walk_stmts(program.body))
    iterators = {s.iterator for s in stmts if isinstance(s, ir.Loop)}
    for s in stmts:
        if isinstance(s, (ir.Assign, ir.Prefetch)):
            ref = statement_ref(n)
            out[id(s)] = ref if ref not in iterators else None
            n += 1
        elif isinstance(s, ir.Loop):
            out[id(s)] = s.iterator
    return out


class Fission(Transformation):
    name = "fission"
    grammar = "LOOP after STATEMENT"

    def candidates(self, program):
        refs = stmt_refs(program)
        for loop in ir.loops(program):
            if len(loop.body) < 2:
                continue
            for s in loop.body[:-1]:
                if isinstance(s, (ir.Assign, ir.Loop)) and refs[id(s)]:
                    yield loop.iterator, refs[id(s)]

    def check(self, program, params):
        name, ref = params
        found = locate(program, loops=[name], statements=[ref])
        if isinstance(found, str):
            return found
        (loop, path), (_, spath) = found
        if list(spath[:-1]) != list(path):
            return f"'{ref}' is not directly in the body of loop '{name}'"
        k = spath[-1]
        first, second = loop.body[:k + 1], loop.body[k + 1:]
        if not any(isinstance(s, (ir.Assign, ir.Loop)) for s in second):
            return f"'{ref}' is the last statement of loop '{name}'; nothing would move"
        for s in first:
            if isinstance(s, ir.Local) and uses_array(second, s.name) \
                    and uses_array(first, s.name):
                return (f"the local '{s.name}' declared in the first part is used both up "
                        f"to and after '{ref}'")
        deps = dependences(program)
        depth = len(path)        # L is the loop at that depth of its statements' loops
        inner = statements_at(deps, path)
        first_stmts = [s for s in inner if s.positions[depth] <= k]
        second_stmts = [s for s in inner if s.positions[depth] > k]
        around = [l.iterator for l in loops_around(program, path)]
        cond = f"{same(around)} and v_{name}_s < v_{name}_t"
        if deps.exists(second_stmts, first_stmts, lambda s, t: cond):
            return (f"a dependence from a statement after '{ref}' to one up to '{ref}' in a "
                    f"later iteration of '{name}' would be reversed (backward carried dependence)")
        return None

    def apply(self, program, params):
        name, ref = params
        loop, path = find_loop(program, name)
        _, spath = find_ref(program, ref)
        k = spath[-1]
        new_name = fresh(declared_names(program), re.sub(r"\d+$", "", name) or name)
        first, second = list(loop.body[:k + 1]), list(loop.body[k + 1:])
        moving = [s for s in first if isinstance(s, ir.Local) and uses_array(second, s.name)]
        first = [s for s in first if not any(s is m for m in moving)]
        second = substitute_stmts(moving + second, {name: ir.Var(new_name)})
        first_loop = with_body(loop, first)
        second_loop = ir.Loop(new_name, loop.lo, loop.hi, loop.annotations, tuple(second))
        return replace_at(program, path, [first_loop, second_loop])


FISSION = Fission()

"""materialize S as NAME: compute the value of assignment S (`sN`, the N-th assignment in
textual order) into a new scalar local just before it.

    for k in 0..K:                           for k in 0..K:
      C[i, j] += A[i, k] * B[k, j]    ==>      local t: f32
                                               t = A[i, k] * B[k, j]
                                               C[i, j] += t

The local has the dtype of S's target (i32 for an i8 target, whose values are computed in
i32 and wrap only when stored), so the value is computed exactly as before (the
interpreter and the code generators evaluate a value in its target's dtype). Always legal
when the value is not already a plain access, iterator or constant; a bf16 update
(`+=` ...) is refused because storing the value in a bf16 local would round it first.
The name defaults to `t` (then t2, t3, ...); `inline NAME` undoes the step.
"""
from __future__ import annotations

from .. import ir
from ..printer import statement_ref
from . import scope
from .base import Transformation
from .util import find_ref, replace_at


def _plain(value) -> bool:
    return isinstance(value, (ir.Access, ir.Const, ir.Var))


class Materialize(Transformation):
    name = "materialize"
    grammar = "STATEMENT as NAME"
    usage_note = "STATEMENT is sN, the N-th assignment"

    def candidates(self, program):
        name = None
        for n, a in enumerate(ir.numbered(program)):
            if isinstance(a, ir.Assign) and not _plain(a.value):
                name = name or scope.default_name(program, "t")
                yield statement_ref(n), name

    def check(self, program, params):
        ref, name = params
        stmt, path = find_ref(program, ref)
        if not isinstance(stmt, ir.Assign):
            return f"'{ref}' is not an assignment (name one as sN, the N-th in textual order)"
        if _plain(stmt.value):
            return f"the value of {ref} is already a plain access, iterator or constant"
        decl = scope.visible_decl(program, path, stmt.target.array)
        if decl.dtype == "bf16" and stmt.op != "=":
            return f"a bf16 local would round the value of {ref} before the '{stmt.op}' update"
        return scope.name_problem(program, name)

    def apply(self, program, params):
        ref, name = params
        stmt, path = find_ref(program, ref)
        dtype = scope.visible_decl(program, path, stmt.target.array).dtype
        dtype = ir.PROMOTED_DTYPES.get(dtype, dtype)      # an i8 target computes in i32
        local = ir.Local(name, dtype, (), None)
        define = ir.Assign(ir.Access(name, ()), "=", stmt.value)
        use = ir.Assign(stmt.target, stmt.op, ir.Access(name, ()), stmt.loc)
        return replace_at(program, path, [local, define, use])


MATERIALIZE = Materialize()

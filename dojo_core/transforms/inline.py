"""inline T: replace every read of the scalar local T by the value of its single
definition `T = E`, and delete the definition and the declaration.

    local t: f32
    t = A[i, k] * B[k, j]             ==>    C[i, j] += A[i, k] * B[k, j]
    C[i, j] += t

Legal when T is a scalar local (not bf16, whose stores round; an i8 T only when E is a
plain i8 element, as other values wrap when stored into it) assigned exactly once, with
`=`, by D; every read of T lies in the statements that follow D in D's block (so each read
sees the value D stored in the same pass through that block); and no statement between D
and the last of those statements writes an array that E reads (the last one may, when it is
a single assignment: its value is evaluated before its store). Each read then evaluates E
on the same values as D did.
"""
from __future__ import annotations

from .. import ir
from . import footprint as fp
from . import scope
from .base import Transformation
from .util import body_at, with_program_body, written_in


def _find_local(program, name):
    for s in ir.walk_stmts(program.body):
        if isinstance(s, ir.Local) and s.name == name:
            return s
    return None


def _definitions(program, name) -> list:
    """(assign, path) of every assignment to name."""
    out = []

    def go(body, path):
        for k, s in enumerate(body):
            if isinstance(s, ir.Assign) and s.target.array == name:
                out.append((s, path + [k]))
            elif isinstance(s, ir.Loop):
                go(s.body, path + [k])
    go(program.body, [])
    return out


def _reads(stmts, name) -> int:
    return sum(1 for a in fp.region_refs(stmts, name) if not a.write)


class Inline(Transformation):
    name = "inline"
    grammar = "LOCAL"

    def candidates(self, program):
        for s in ir.walk_stmts(program.body):
            if isinstance(s, ir.Local) and not s.dims:
                defs = _definitions(program, s.name)
                if len(defs) == 1 and defs[0][0].op == "=":
                    yield s.name

    def check(self, program, name):
        decl = _find_local(program, name)
        if decl is None:
            if program.array(name) is not None:
                return f"'{name}' is an array of the kernel, not a local"
            return f"there is no local '{name}'"
        if decl.dims:
            return f"'{name}' is not a scalar local"
        if decl.dtype == "bf16":
            return f"inlining the bf16 local '{name}' would skip the rounding of its stores"
        defs = _definitions(program, name)
        if len(defs) != 1:
            return f"'{name}' is assigned {len(defs)} times; inline needs a single definition"
        define, path = defs[0]
        if define.op != "=":
            return f"'{name}' is updated with '{define.op}', not defined once with '='"
        source = scope.visible_decl(program, path, define.value.array) \
            if isinstance(define.value, ir.Access) else None
        if decl.dtype == "i8" and getattr(source, "dtype", None) != "i8":
            return f"inlining the i8 local '{name}' would skip the wrap-around of its store"
        if any(isinstance(a, ir.Access) and a.array == name for a in ir.walk_expr(define.value)):
            return f"the definition of '{name}' reads '{name}'"
        body, at = body_at(program, path), path[-1]
        after = body[at + 1:]
        if _reads(after, name) != _reads(program.body, name):
            return (f"'{name}' is read outside the statements that follow its definition "
                    "in its block")
        sources = {a.array for a in ir.walk_expr(define.value) if isinstance(a, ir.Access)}
        readers = [k for k, s in enumerate(after) if _reads([s], name)]
        for k in range(readers[-1] + 1 if readers else 0):
            clash = sorted(written_in([after[k]]) & sources)
            if clash and not (k == readers[-1] and isinstance(after[k], ir.Assign)):
                return (f"'{clash[0]}' is written between the definition of '{name}' and "
                        "its last read")
        return None

    def apply(self, program, name):
        decl = _find_local(program, name)
        define, _ = _definitions(program, name)[0]

        def drop(body):
            out = []
            for s in body:
                if s is decl or s is define:
                    continue
                if isinstance(s, ir.Loop):
                    s = ir.Loop(s.iterator, s.lo, s.hi, s.annotations, drop(s.body), s.loc)
                out.append(s)
            return tuple(out)
        body = scope.rewrite_accesses(drop(program.body), name, lambda a: define.value)
        return with_program_body(program, body)


INLINE = Inline()

"""Names, scopes and per-program memoisation shared by the data transformations
(stage, accumulate, layout, inline, materialize)."""
from __future__ import annotations

import re

from .. import ir
from ..parser import KEYWORDS
from .util import declared_names, fresh


def taken_names(program) -> frozenset:
    """util.declared_names, memoised for the current program."""
    return CACHE.get(program, "declared", lambda: frozenset(declared_names(program)))


def name_problem(program, name: str):
    """Why `name` cannot name a new local or iterator here, or None."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) is None or name in KEYWORDS \
            or name in ir.FUNCTIONS:
        return f"'{name}' is not a valid name"
    if name in taken_names(program):
        return f"the name '{name}' is already taken"
    return None


def default_name(program, base: str) -> str:
    """base if it is free, else base2, base3, ..."""
    taken = taken_names(program)
    return base if base not in taken else fresh(set(taken), base)


def loop_table(program) -> dict:
    """iterator -> (loop, path, loops around it), memoised for the current program."""
    def compute():
        table = {}

        def go(body, path, around):
            for k, s in enumerate(body):
                if isinstance(s, ir.Loop):
                    table[s.iterator] = (s, path + [k], around)
                    go(s.body, path + [k], around + [s])
        go(program.body, [], [])
        return table
    return CACHE.get(program, "loops", compute)


def assignment_index(program) -> dict:
    """id(assign) -> its position in textual order (the deps statement S<n>)."""
    return CACHE.get(program, "assign-index",
                     lambda: {id(a): k for k, a in enumerate(ir.assignments(program))})


def visible_decl(program, path, name):
    """The declaration (ArrayDecl or Local) of `name` visible at the statement at path,
    or None (a local must be declared earlier in a body enclosing that statement)."""
    body = program.body
    for depth, k in enumerate(path):
        for s in body[:k]:
            if isinstance(s, ir.Local) and s.name == name:
                return s
        if depth + 1 < len(path):
            body = body[k].body
    return program.array(name)


def declared_dtype(program, name: str):
    """The element type declared for an array of the kernel or a local anywhere in it
    (local names are unique in a program), or None for an unknown name."""
    for decl in program.arrays:
        if decl.name == name:
            return decl.dtype
    for stmt in ir.walk_stmts(program.body):
        if isinstance(stmt, ir.Local) and stmt.name == name:
            return stmt.dtype
    return None


def kind_of(decl) -> str:
    return "local" if isinstance(decl, ir.Local) else decl.kind


def rewrite_accesses(stmts, array: str, fn, box=None) -> tuple:
    """The statements with every access to `array` (targets and reads) replaced by fn(access).
    A prefetch of `array` gets ``box(ranges)`` as its ranges when ``box`` is given (a
    rewrite that changes the array's dimensions must say how its boxes change), else it is
    kept as it is (the array itself is unchanged: its accesses now read another buffer)."""
    def expr(e):
        return ir.map_expr(e, lambda n: fn(n) if isinstance(n, ir.Access) and n.array == array
                           else n)
    out = []
    for s in stmts:
        if isinstance(s, ir.Loop):
            out.append(ir.Loop(s.iterator, s.lo, s.hi, s.annotations,
                               rewrite_accesses(s.body, array, fn, box), s.loc))
        elif isinstance(s, ir.Assign):
            t = fn(s.target) if s.target.array == array else s.target
            out.append(ir.Assign(t, s.op, expr(s.value), s.loc))
        elif isinstance(s, ir.Prefetch) and s.array == array and box is not None:
            out.append(ir.Prefetch(s.array, box(s.ranges), s.loc))
        else:
            out.append(s)
    return tuple(out)


def reshape_buffer(program, name: str, dims, access, box=None):
    """The program with the local or temp ``name`` declared with ``dims(old dims)`` and every
    access to it replaced by ``access(old access)``; a prefetch of it gets ``box(ranges)``
    (see ``rewrite_accesses``). Used by the transformations that change a private buffer's
    shape (``layout``, ``divide``)."""
    def decls(body):
        out = []
        for s in body:
            if isinstance(s, ir.Local) and s.name == name:
                out.append(ir.Local(s.name, s.dtype, tuple(dims(s.dims)), s.space, s.loc))
            elif isinstance(s, ir.Loop):
                out.append(ir.Loop(s.iterator, s.lo, s.hi, s.annotations, decls(s.body),
                                   s.loc))
            else:
                out.append(s)
        return tuple(out)

    body = rewrite_accesses(decls(program.body), name, access, box=box)
    arrays = tuple(ir.ArrayDecl(d.kind, d.name, d.dtype, tuple(dims(d.dims)), d.loc)
                   if d.name == name else d for d in program.arrays)
    return ir.Program(program.name, program.sizes, arrays, body, program.doc, program.loc)


# --------------------------------------------------------------------------- caching

class ProgramCache:
    """Results memoised for the last program seen (by identity): enumeration calls
    candidates and check many times on one program value."""

    def __init__(self):
        self.program = None
        self.entries = {}

    def get(self, program, key, compute):
        if self.program is not program:
            self.program, self.entries = program, {}
        if key not in self.entries:
            self.entries[key] = compute()
        return self.entries[key]


CACHE = ProgramCache()

"""Tree surgery shared by the transformations: locating loops and statements by name,
rebuilding the immutable tree along a path, fresh deterministic names."""
from __future__ import annotations

import re

from .. import ir
from ..affine import simplify, sub, substitute_index
from ..poly import const_value
from ..printer import statement_number, statement_ref


def find_loop(program, name: str):
    """(loop, path) of the loop with this iterator, or (None, None). A path is the list
    of positions from the program body down to the statement."""
    def go(body, path):
        for k, s in enumerate(body):
            if isinstance(s, ir.Loop):
                if s.iterator == name:
                    return s, path + [k]
                found = go(s.body, path + [k])
                if found[0] is not None:
                    return found
        return None, None
    return go(program.body, [])


def find_ref(program, ref: str):
    """(statement, path) for a reference: a loop iterator, or `sN` for the N-th assignment
    or prefetch in textual order. (None, None) when nothing matches."""
    loop, path = find_loop(program, ref)
    if loop is not None:
        return loop, path
    want = statement_number(ref)
    if want is None:
        return None, None
    count = [0]

    def go(body, path):
        for k, s in enumerate(body):
            if isinstance(s, (ir.Assign, ir.Prefetch)):
                if count[0] == want:
                    return s, path + [k]
                count[0] += 1
            elif isinstance(s, ir.Loop):
                found = go(s.body, path + [k])
                if found[0] is not None:
                    return found
        return None, None
    return go(program.body, [])


def locate(program, loops=(), statements=()):
    """[(loop, path) for each iterator in ``loops``] followed by [(statement, path) for each
    reference in ``statements``] (``find_ref``); or, for the first name that matches
    nothing, the one-sentence reason ("there is no loop 'i'", "there is no statement 's3'")."""
    found = []
    for names, find, kind in ((loops, find_loop, "loop"), (statements, find_ref, "statement")):
        for name in names:
            node, path = find(program, name)
            if node is None:
                return f"there is no {kind} '{name}'"
            found.append((node, path))
    return found


def ref_of(program, stmt) -> str:
    """The reference text of a statement (inverse of find_ref)."""
    if isinstance(stmt, ir.Loop):
        return stmt.iterator
    for n, a in enumerate(ir.numbered(program)):
        if a is stmt:
            return statement_ref(n)
    raise KeyError(stmt)


def body_at(program, path):
    """The body (tuple of statements) that contains the statement at path."""
    body = program.body
    for k in path[:-1]:
        body = body[k].body
    return body


def loops_around(program, path) -> list:
    """The loops enclosing the statement at path, outermost first."""
    out, body = [], program.body
    for k in path[:-1]:
        out.append(body[k])
        body = body[k].body
    return out


def replace_at(program, path, new_stmts):
    """A program with the statement at path replaced by the statements new_stmts."""
    def go(body, path):
        k = path[0]
        if len(path) == 1:
            return body[:k] + tuple(new_stmts) + body[k + 1:]
        loop = body[k]
        return body[:k] + (with_body(loop, go(loop.body, path[1:])),) + body[k + 1:]
    return with_program_body(program, go(program.body, list(path)))


def with_body(loop, body):
    return ir.Loop(loop.iterator, loop.lo, loop.hi, loop.annotations, tuple(body), loop.loc)


def with_program_body(program, body):
    return ir.Program(program.name, program.sizes, program.arrays, tuple(body), program.doc,
                      program.loc)


def declared_names(program) -> set:
    names = {n for n, _ in program.sizes} | {d.name for d in program.arrays}
    for s in ir.walk_stmts(program.body):
        if isinstance(s, ir.Loop):
            names.add(s.iterator)
        elif isinstance(s, ir.Local):
            names.add(s.name)
    return names


def reserved(name: str) -> bool:
    """Names of the form s<digits> are statement references, never iterator names."""
    return statement_number(name) is not None


def fresh(taken: set, base: str, start: int = 2) -> str:
    """base<k> for the smallest k >= start that is not taken nor reserved (and records it)."""
    if base == "s":
        base = "s_"
    k = start
    while f"{base}{k}" in taken:
        k += 1
    name = f"{base}{k}"
    taken.add(name)
    return name


def renamed_copy(stmts, taken: set, suffix: str = "t") -> tuple:
    """The statements with every iterator and local declared in them renamed fresh (`i0` ->
    `i0t` for suffix "t", `i0t2` where that is taken; recorded in ``taken``), so that the
    copy can stand beside the original in one program."""
    renames = {}
    for s in ir.walk_stmts(tuple(stmts)):
        old = s.iterator if isinstance(s, ir.Loop) else s.name if isinstance(s, ir.Local) else None
        if old is not None:
            base = f"{old}{suffix}"
            renames[old] = base if base not in taken else fresh(taken, base)
            taken.add(renames[old])
    iterators = {old: ir.Var(new) for old, new in renames.items()}

    def expr(e):
        def fn(n):
            if isinstance(n, ir.Var) and n.name in iterators:
                return iterators[n.name]
            if isinstance(n, ir.Access) and n.array in renames:
                return ir.Access(renames[n.array], n.indices, n.loc)
            return n
        return ir.map_expr(e, fn)

    def go(body):
        out = []
        for s in body:
            if isinstance(s, ir.Loop):
                out.append(ir.Loop(renames[s.iterator], expr(s.lo), expr(s.hi), s.annotations,
                                   go(s.body), s.loc))
            elif isinstance(s, ir.Assign):
                out.append(ir.Assign(expr(s.target), s.op, expr(s.value), s.loc))
            elif isinstance(s, ir.Local):
                out.append(ir.Local(renames[s.name], s.dtype, tuple(expr(d) for d in s.dims),
                                    s.space, s.loc))
            elif isinstance(s, ir.Prefetch):
                out.append(ir.Prefetch(s.array, tuple((expr(lo), expr(hi)) for lo, hi in s.ranges),
                                       s.loc))
            else:
                out.append(s)
        return tuple(out)
    return go(tuple(stmts))


def map_exprs(stmts, fn):
    """Rebuild statements with fn applied to every expression (bounds, dims, indices, values)."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Loop):
            out.append(ir.Loop(s.iterator, fn(s.lo), fn(s.hi), s.annotations,
                               tuple(map_exprs(s.body, fn)), s.loc))
        elif isinstance(s, ir.Assign):
            t = s.target
            out.append(ir.Assign(ir.Access(t.array, tuple(fn(i) for i in t.indices), t.loc),
                                 s.op, fn(s.value), s.loc))
        elif isinstance(s, ir.Local):
            out.append(ir.Local(s.name, s.dtype, tuple(fn(d) for d in s.dims), s.space, s.loc))
        elif isinstance(s, ir.Prefetch):
            out.append(ir.Prefetch(s.array, tuple(_map_range(lo, hi, fn) for lo, hi in s.ranges),
                                   s.loc))
        else:
            out.append(s)
    return tuple(out)


def _map_range(lo, hi, fn):
    """A prefetch range with fn applied to its bounds; a one-index range (lo..lo + 1, printed
    as the index alone) stays one."""
    if hi == ir.BinOp("+", lo, ir.Const(1)):
        new = fn(lo)
        return new, ir.BinOp("+", new, ir.Const(1))
    return fn(lo), fn(hi)


def substitute_stmts(stmts, mapping: dict):
    """Substitute iterators in every expression of the statements, simplifying indices
    and bounds."""
    def fn(e):
        e2 = substitute_index(e, mapping)
        return simplify(e2) if _is_index_like(e2) else e2
    return map_exprs(stmts, fn)


def _is_index_like(expr) -> bool:
    return not any(isinstance(n, (ir.Access,)) or (isinstance(n, ir.Const) and
                   isinstance(n.value, float)) or (isinstance(n, ir.BinOp) and n.op == "/")
                   for n in ir.walk_expr(expr))


def rename_loops(stmts, renames: dict):
    """Rename loop iterators (declarations and uses) inside the statements."""
    mapping = {old: ir.Var(new) for old, new in renames.items()}

    def go(body):
        out = []
        for s in body:
            if isinstance(s, ir.Loop):
                out.append(ir.Loop(renames.get(s.iterator, s.iterator), s.lo, s.hi,
                                   s.annotations, go(s.body), s.loc))
            else:
                out.append(s)
        return tuple(out)
    return substitute_stmts(go(stmts), mapping)


def extent(loop, sizes):
    """The constant trip count of a loop (hi - lo at these sizes), or None if it varies."""
    lo, hi = const_value(loop.lo, sizes), const_value(loop.hi, sizes)
    if lo is None or hi is None:
        return None
    return max(0, hi - lo)


def one_element_box(stmt: ir.Prefetch, sizes) -> bool:
    """Whether every range of the prefetch's box holds one index (the box a vector loop's
    code can ask for: one element per iteration)."""
    return all(const_value(simplify(sub(hi, lo)), sizes) == 1 for lo, hi in stmt.ranges)


def max_extent(loop, sizes):
    """A constant bound on a loop's trip count: its extent, or F for a tail 0..min(F, ...)."""
    n = extent(loop, sizes)
    if n is not None:
        return n
    if isinstance(loop.hi, ir.Call) and loop.hi.func == "min" and const_value(loop.lo, sizes) == 0:
        vals = [v for v in (const_value(a, sizes) for a in loop.hi.args) if v is not None]
        return min(vals) if vals else None
    return None


def accesses_in(stmts):
    """Every Access (targets and reads) in the statements."""
    out = []
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ir.Assign):
            out.append(s.target)
            out.extend(a for a in ir.walk_expr(s.value) if isinstance(a, ir.Access))
    return out


def written_in(stmts) -> set:
    return {s.target.array for s in ir.walk_stmts(stmts) if isinstance(s, ir.Assign)}


def uses_var(stmts, name) -> bool:
    """Does a loop bound, an assignment or a prefetch's box in the statements read the
    variable ``name``?"""
    return any(name in ir.var_names(e) for s in ir.walk_stmts(stmts) for e in ir.stmt_exprs(s))

"""pipeline L from M: software pipelining by one iteration. The statements of L's body from
loop M on (the second stage) run one iteration of L later than those before M (the first
stage), so that each iteration of L does the first stage of row L and the second stage of
row L - 1, one after the other and ready to `fuse`.

    for i in 0..N:                          local s: f32[2]
      local s: f32                          s[0] = 0
      s = 0                                 for kp in 0..M:
      for k in 0..M:                          s[0] += X[0, kp]
        s += X[i, k]             ==>        for i in 1..N:
      for l in 0..M:                          s[i % 2] = 0
        Y[i, l] = X[i, l] / s                 for k in 0..M:
                                                s[i % 2] += X[i, k]
                                              for l in 0..M:
                                                Y[i - 1, l] = X[i - 1, l] / s[(i + 1) % 2]
                                            for le in 0..M:
                                              Y[N - 1, le] = X[N - 1, le] / s[1]

The first stage of L's first iteration runs alone before the loop (the prologue, its
iterators and locals renamed with a `p`), the second stage of the last one after it (the
epilogue, with an `e`). A local of L's body that both stages use carries a value from one
iteration to the next one's second stage, so it gets two slots, a new first dimension
indexed by the iteration's parity ((L - lo) % 2): iteration L's first stage fills one slot
while the second stage reads the other (modulo variable expansion). A local only one stage
uses keeps one slot, declared at the top of the loop's body (ahead of both stages, so that
statements may move between them). Once the stages are adjacent, `fuse` can interleave the second
stage of one row with the first stage of the next (softmax: the streaming stores of a row
overlap the next row's exponentials instead of following them).

Legal iff no dependence goes from the second stage at some iteration v to the first stage at
v + 1 (within one iteration of the loops around L): that is the one pair of instances whose
order the shift reverses (exact dependences; the two slots keep the locals' values apart).
Refused: a loop that is annotated, whose extent is not a constant of at least 2 at the
program's sizes, an M that is not a loop directly in L's body or has nothing before it, a
carried `in shared` local, and two slots of more elements than a local may hold.
"""
from __future__ import annotations

from math import prod

from .. import ir
from ..affine import simplify
from ..deps import dependences, same
from ..poly import const_value
from . import footprint as fp
from .base import Transformation
from .fission import uses_array
from .util import (declared_names, extent, find_loop, locate, loops_around, renamed_copy,
                   replace_at, substitute_stmts)

SLOTS = 2      # iterations in flight: the first stage of one and the second stage of the one before


def _stages(loop, cut: int):
    """(locals of the first stage, its statements, locals of the second stage, its
    statements, locals both stages use) of L's body cut before position ``cut``."""
    body = loop.body
    first = tuple(s for s in body[:cut] if not isinstance(s, ir.Local))
    second = tuple(s for s in body[cut:] if not isinstance(s, ir.Local))
    decls = [s for s in body if isinstance(s, ir.Local)]
    carried = tuple(d for d in decls if uses_array(first, d.name) and uses_array(second, d.name))
    only_second = tuple(d for d in decls if d not in carried and uses_array(second, d.name))
    only_first = tuple(d for d in decls if d not in carried and d not in only_second)
    return only_first, first, only_second, second, carried


def _with_slot(stmts, names: set, slot) -> tuple:
    """Every access to a local in ``names`` (targets included) indexed by ``slot`` first."""
    def access(n):
        if isinstance(n, ir.Access) and n.array in names:
            return ir.Access(n.array, (slot,) + n.indices, n.loc)
        return n

    def go(body):
        out = []
        for s in body:
            if isinstance(s, ir.Loop):
                out.append(ir.Loop(s.iterator, s.lo, s.hi, s.annotations, go(s.body), s.loc))
            elif isinstance(s, ir.Assign):
                out.append(ir.Assign(access(s.target), s.op, ir.map_expr(s.value, access), s.loc))
            else:
                out.append(s)
        return tuple(out)
    return go(stmts)


class Pipeline(Transformation):
    name = "pipeline"
    grammar = "LOOP from STAGE_LOOP"

    def candidates(self, program):
        sizes = program.size_values
        for loop in ir.loops(program):
            if loop.annotations or (extent(loop, sizes) or 0) < 2:
                continue
            seen_loop = False
            for s in loop.body:
                if isinstance(s, ir.Loop):
                    if seen_loop:
                        yield loop.iterator, s.iterator
                    seen_loop = True

    def check(self, program, params):
        loop_name, stage_name = params
        found = locate(program, loops=params)
        if isinstance(found, str):
            return found
        (loop, path), (stage, stage_path) = found
        if stage_path[:-1] != path:
            return f"loop '{stage_name}' is not directly in the body of '{loop_name}'"
        if loop.annotations:
            return "annotated loops are not pipelined; pipeline before annotating"
        n = extent(loop, program.size_values)
        if n is None:
            return f"the extent of '{loop_name}' is not a constant at these sizes"
        if n < 2:
            return f"loop '{loop_name}' runs fewer than 2 iterations: there is nothing to overlap"
        cut = stage_path[-1]
        _, first, _, _, carried = _stages(loop, cut)
        if not first:
            return f"nothing in '{loop_name}' runs before '{stage_name}': there is no first stage"
        for d in carried:
            if d.space == "shared":
                return f"local '{d.name}' is in shared memory; a block's buffer does not get two slots"
            dims = [const_value(x, program.size_values) for x in d.dims]
            if any(x is None for x in dims):
                return f"local '{d.name}' does not have constant dimensions at these sizes"
            if SLOTS * prod(dims) > fp.MAX_ELEMENTS:
                return (f"two slots of local '{d.name}' would hold {SLOTS * prod(dims)} elements, "
                        f"more than a local may ({fp.MAX_ELEMENTS})")
        deps = dependences(program)
        depth = len(path)
        stmts = deps.inside(loop_name)
        firsts = [s for s in stmts if s.positions[depth] < cut]
        seconds = [s for s in stmts if s.positions[depth] >= cut]
        around = [l.iterator for l in loops_around(program, path)]
        cond = f"{same(around)} and v_{loop_name}_t = v_{loop_name}_s + 1"
        if deps.exists(seconds, firsts, lambda s, t: cond):
            return (f"a dependence goes from the statements from '{stage_name}' at one iteration "
                    f"of '{loop_name}' to those before it at the next, which the shift would reverse")
        return None

    def apply(self, program, params):
        loop_name, stage_name = params
        loop, path = find_loop(program, loop_name)
        cut = next(k for k, s in enumerate(loop.body)
                   if isinstance(s, ir.Loop) and s.iterator == stage_name)
        only_first, first, only_second, second, carried = _stages(loop, cut)
        it = ir.Var(loop_name)
        names = {d.name for d in carried}
        slot = simplify(ir.BinOp("%", ir.BinOp("-", it, loop.lo), ir.Const(SLOTS)))
        first = _with_slot(first, names, slot)
        second = _with_slot(second, names, slot)
        decls = [ir.Local(d.name, d.dtype, (ir.Const(SLOTS),) + tuple(d.dims),
                          None if d.space == "register" else d.space, d.loc) for d in carried]
        taken = declared_names(program)
        prologue = renamed_copy(only_first + substitute_stmts(first, {loop_name: loop.lo}),
                                taken, "p")
        last = simplify(ir.BinOp("-", loop.hi, ir.Const(1)))
        epilogue = renamed_copy(only_second + substitute_stmts(second, {loop_name: last}),
                                taken, "e")
        delayed = substitute_stmts(second, {loop_name: ir.BinOp("-", it, ir.Const(1))})
        steady = ir.Loop(loop_name, simplify(ir.BinOp("+", loop.lo, ir.Const(1))), loop.hi, (),
                         only_first + only_second + first + delayed, loop.loc)
        return replace_at(program, path, [*decls, *prologue, steady, *epilogue])


PIPELINE = Pipeline()

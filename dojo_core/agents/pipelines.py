"""Pipelined-rows moves: ``pipeline L from M`` of a loop L whose body runs several passes
(loops) over one row, then ``fuse`` of the first stage's last pass with the delayed second
stage's first pass, so that one loop does the arithmetic of row L and the stores of row
L - 1 together (the scalar statements between the two passes, which update this row's slot,
moved after the delayed pass first); then ``vectorize inner`` and ``parallelize outer``.

A row kernel (softmax, layernorm) runs a reduction pass, an arithmetic pass, and a pass that
only scales and stores. The last pass has little arithmetic to hide its memory traffic
behind, and the passes before it have little memory traffic to hide their arithmetic: run
one after the other, the core waits for one resource, then for the other. Interleaved (the
second stage of the row before beside the first stage of this one), both run at once.

Variants, all from the program: every cut M (a loop of L's body after another loop); with
and without a cache write of an array that the second stage writes and either the first
touches too or the second reads back (``stage A at L as At``, its store-back loop fused with
the pass before it: the row stays in a local and is stored once, with streaming stores
where the generator gives them); with and without a prefetch of the next row in the first
stage (``prefetch A at P ahead L``, where the prefetch candidates offer it: a row of 4 KiB
is a page, where hardware prefetchers stop, and softmax rows pipelined on a Zen 3 ran 7%
faster with it);
with more than one thread, L split first so that its outer part runs in parallel, in
4 x threads chunks or more (the rule ``parallelize outer`` uses: at least 4 iterations to
share), of the largest size that divides L's extent.
Nothing here is fitted to one kernel or one machine: the measurements decide.
"""
from __future__ import annotations

import os

from .. import ir
from ..transforms.fission import stmt_refs, uses_array
from ..transforms.prefetch import PREFETCH
from ..transforms.util import declared_names, extent, find_loop, fresh
from .moves import Builder, Move, finish

CHUNKS_PER_THREAD = 4


def pipeline_moves(program, threads=None) -> list:
    """A move per (loop, cut, cache-written array or none) that pipelines and fuses."""
    moves = []
    sizes = program.size_values
    ahead_of = [params for params in PREFETCH.candidates(program) if params[2] is not None]
    for loop in ir.loops(program):
        passes = [s for s in loop.body if isinstance(s, ir.Loop)]
        n = extent(loop, sizes)
        if loop.annotations or len(passes) < 2 or n is None or n < 2:
            continue
        for k, cut in enumerate(passes[1:], 1):
            ahead = _next_row_prefetches(ahead_of, loop.iterator, passes[:k])
            for array in (None, *_cache_writable(loop, cut)):
                for prefetches in ((), ahead) if ahead else ((),):
                    move = _pipelined(program, loop.iterator, n, cut.iterator, array, threads,
                                      prefetches)
                    if move is not None:
                        moves.append(move)
    return moves


def _next_row_prefetches(ahead_of, name: str, first_stage) -> tuple:
    """``prefetch A at P ahead L`` for each array A whose next row the prefetch candidates
    (``ahead_of``: their (array, pass, L) of the ahead form) offer at a pass P of the first
    stage, the first such pass per array. Pipelined, the first stage is the one on the
    newest row: its passes are where the next row can be asked for (a prefetch in the
    delayed stage would ask for the row the first stage reads in the same iteration)."""
    steps, asked = [], set()
    for p in first_stage:
        for params in ahead_of:
            if params[1:] == (p.iterator, name) and params[0] not in asked:
                asked.add(params[0])
                steps.append(PREFETCH.format(params))
    return tuple(steps)


def _cache_writable(loop, cut) -> list:
    """Arrays that the passes from ``cut`` on write and that the statements before it touch
    or that the second stage reads back (softmax's Y, exponentiated, then scaled)."""
    k = loop.body.index(cut)
    second = loop.body[k:]
    written = sorted({s.target.array for s in ir.walk_stmts(second) if isinstance(s, ir.Assign)})
    read = {e.array for s in ir.walk_stmts(second) if isinstance(s, ir.Assign)
            for e in ir.walk_expr(s.value) if isinstance(e, ir.Access)}
    return [a for a in written if a in read or uses_array(loop.body[:k], a)]


def _pipelined(program, name: str, n: int, cut: str, array, threads, prefetches=()):
    b = Builder(program)
    label = f"pipeline {name} from {cut}"
    if prefetches:
        if not all(b.maybe(step) for step in prefetches):
            return None
        label += " prefetching " + ", ".join(step.split()[1] for step in prefetches)
    threads = threads or os.cpu_count() or 1
    if threads > 1:
        # the largest chunk that divides n into 4 x threads chunks or more: a partial last
        # chunk would leave the chunk loop without the constant extent pipeline needs
        factor = max((f for f in range(2, n // (CHUNKS_PER_THREAD * threads) + 1) if n % f == 0),
                     default=None)
        before = {l.iterator for l in ir.loops(b.program)}
        if factor is None or not b.maybe(f"split {name} by {factor}"):
            return None
        name = [l.iterator for l in ir.loops(b.program) if l.iterator not in before][-1]
        label += f" in chunks of {factor}"
    if array is not None:
        taken = declared_names(b.program)
        local = f"{array}t" if f"{array}t" not in taken else fresh(taken, f"{array}t")
        before = {l.iterator for l in ir.loops(b.program)}
        if not b.maybe(f"stage {array} at {name} as {local}"):
            return None
        store = [l.iterator for l in ir.loops(b.program) if l.iterator not in before]
        row, _ = find_loop(b.program, name)
        passes = [s.iterator for s in row.body if isinstance(s, ir.Loop)]
        if len(store) != 1 or passes[-1:] != store or len(passes) < 2 \
                or not b.maybe(f"fuse {passes[-2]} {store[0]}"):
            return None
        label += f" stage {array}"
    if not b.maybe(f"pipeline {name} from {cut}"):
        return None
    if not _sink_past(b, name, cut):
        return None
    row, _ = find_loop(b.program, name)
    k = next(i for i, s in enumerate(row.body) if isinstance(s, ir.Loop) and s.iterator == cut)
    before = [s for s in row.body[:k] if isinstance(s, ir.Loop)]
    if not before or not b.maybe(f"fuse {before[-1].iterator} {cut}"):
        return None
    finish(b, parallelize=threads > 1)
    return Move(label, tuple(b.steps))


def _sink_past(b: Builder, name: str, cut: str) -> bool:
    """Move the statements between the first stage's last pass and the delayed pass ``cut``
    (layernorm's ``var = var / M``) after ``cut`` (``reorder``, legal where no dependence
    links them: they update this iteration's slot, ``cut`` reads the one before), so that
    the two passes are adjacent; False when one cannot move."""
    for _ in range(len(find_loop(b.program, name)[0].body)):
        row, _ = find_loop(b.program, name)
        k = next(i for i, s in enumerate(row.body) if isinstance(s, ir.Loop) and s.iterator == cut)
        movable = [s for s in row.body[:k] if isinstance(s, (ir.Assign, ir.Loop))]
        if not movable or isinstance(movable[-1], ir.Loop):
            return True
        ref = stmt_refs(b.program).get(id(movable[-1]))
        if ref is None or not b.maybe(f"reorder {ref} {cut}"):
            return False
    return False


__all__ = ["pipeline_moves"]

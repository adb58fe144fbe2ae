"""The dot-product tile ``dot b/tb x r/tr``: for a reduction whose innermost reduction loop
``r`` walks the reads with unit stride while the output's loop ``b`` does not (PolyBench
syrk's ``A[j, k]``, a matrix-vector product's ``A[i, j]``), run ``r`` as vector lanes and
``tb`` iterations of ``b`` side by side, so each loaded vector of the shared operand feeds
``tb`` fused multiply-adds:

    split b by tb, partition b0           (full row blocks keep a constant extent)
    split r by tr, rfactor r1 as Tr       (one partial sum per lane: TVM's rfactor)
    expand Tr at b1, fission b1 twice     (init / reduce / combine loops)
    interchange until the reduction loops sit outside b1, partition r0,
    unroll b1, vectorize r1

``tb`` comes from the target's registers (the largest power of two with ``tb``
accumulators, ``tb`` loads and one shared vector in them, and its half), ``tr`` is one or two vectors of the dtype's lanes: nothing is fitted to one
ISA or dtype.
"""
from __future__ import annotations

from .. import ir
from ..transforms.base import NotApplicable
from ..transforms.split import split_names
from ..transforms.util import declared_names, find_loop, fresh
from .moves import Builder, Move, bubble, finish, loop_extent, parents, uses
from .tiling import MAX_ROWS


def dot_tile_moves(base, pre, iters, stmt, reduction, bi, target, itemsize,
                   parallel=True) -> list:
    """The dot tiles of one perfect reduction nest (none when ``r`` is not the unit-stride
    loop of the reads, or ``b`` is), best-ranked first."""
    r = reduction[-1]
    if not _dot_shaped(stmt, bi, r):
        return []
    lanes = target.lanes(itemsize)
    fit = min(MAX_ROWS, (target.vector_registers - 1) // 2)
    most = 1 << (fit.bit_length() - 1)          # a power of two: rows that divide sizes
    rows = sorted({most, max(2, most // 2)}, reverse=True)
    n_b, n_r = loop_extent(base, bi), loop_extent(base, r)
    moves = []
    for rank_b, tb in enumerate(rows):
        if n_b is not None and tb >= n_b:
            continue
        for rank_r, tr in enumerate((lanes, 2 * lanes)):
            if n_r is not None and tr >= n_r:
                continue
            try:
                steps = _dot(base, iters, bi, reduction, tb, tr, stmt.target.array, parallel)
            except (NotApplicable, ValueError):
                continue
            moves.append(Move(f"dot {bi}/{tb} x {r}/{tr}", tuple(pre) + tuple(steps),
                              bonus=-0.1 * (rank_b + rank_r)))
    return moves


def _dot_shaped(stmt, b: str, r: str) -> bool:
    """r indexes the last dimension of every read that uses it, with coefficient 1 (a unit
    stride), and b indexes some read in another dimension than the last."""
    reads = [e for e in ir.walk_expr(stmt.value) if isinstance(e, ir.Access) and e.indices]
    with_r = [a for a in reads if any(uses(i, r) for i in a.indices)]
    if not with_r or any(not uses(a.indices[-1], r) or any(uses(i, r) for i in a.indices[:-1])
                         for a in with_r):
        return False
    return any(any(uses(i, b) for i in a.indices[:-1]) for a in reads)


def _child_loops(loop) -> list:
    return [s for s in loop.body if isinstance(s, ir.Loop)]


def _dot(base, iters, bi, reduction, tb, tr, target, parallel) -> list:
    b = Builder(base)
    r = reduction[-1]
    others = [it for it in iters if it != bi and it not in reduction]
    bubble(b, others + [bi] + reduction)
    b0, b1 = split_names(b.program, bi)
    b.step(f"split {bi} by {tb}")
    b.maybe(f"partition {b0}")
    r0, r1 = split_names(b.program, r)
    b.step(f"split {r} by {tr}")
    taken = declared_names(b.program)
    partial = f"{target}r" if f"{target}r" not in taken else fresh(taken, f"{target}r")
    b.step(f"rfactor {r1} as {partial}")
    b.step(f"expand {partial} at {b1}")
    init, root, _ = _child_loops(find_loop(b.program, b1)[0])
    b.step(f"fission {b1} after {init.iterator}")
    rows = parents(b.program)[id(find_loop(b.program, root.iterator)[0])].iterator
    b.step(f"fission {rows} after {root.iterator}")
    while True:                       # the reduction loops outside the row loop
        inner = _child_loops(find_loop(b.program, rows)[0])
        if len(inner) != 1 or inner[0].iterator == r1:
            break
        b.step(f"interchange {rows} {inner[0].iterator}")
    if loop_extent(b.program, r1) is None:
        b.maybe(f"partition {r0}")
    b.step(f"unroll {rows}")
    b.step(f"vectorize {r1}")
    finish(b, parallelize=parallel)
    return b.steps

"""The steps of one register tile (``tiles.py`` chooses which tiles to try): the splits,
the loop order, the register buffer, the staged panel, the precomputed broadcast operands,
the partitions of partial tiles, unroll and vectorize, and a prefetch of the next tile of
the output; and how a tile built at one size is resized to another (``resize_step``,
``resize_precomputes``)."""
from __future__ import annotations

from .. import ir
from ..printer import print_expr
from ..transforms import apply_step
from ..transforms.base import NotApplicable
from ..transforms.precompute import invariant_operands
from ..transforms.prefetch import PREFETCH
from ..transforms.split import split_names
from ..transforms.util import declared_names, fresh
from .moves import Builder, bubble, finish, uses
from .tile_init import find_initialiser, fuse_initialiser


def last_dim_layout(program, buffer: str, iterator: str):
    """``layout BUFFER ...`` moving the dimension that ``iterator`` indexes (in the first
    access of BUFFER that uses it) last; None when it already is, or no access uses it."""
    for stmt in ir.assignments(program):
        for e in [stmt.target, *ir.walk_expr(stmt.value)]:
            if isinstance(e, ir.Access) and e.array == buffer:
                used = [d for d, index in enumerate(e.indices) if uses(index, iterator)]
                if not used:
                    continue
                if len(used) > 1 or used[0] == len(e.indices) - 1:
                    return None
                order = [d for d in range(len(e.indices)) if d != used[0]] + used
                return f"layout {buffer} " + " ".join(map(str, order))
    return None


def resize_step(text: str, factors: dict) -> str:
    """``text`` with a split of a loop in ``factors`` by that factor instead (None: unchanged)."""
    words = text.split()
    if words[0] == "split" and words[1] in factors and factors[words[1]] is not None:
        return f"split {words[1]} by {factors[words[1]]}"
    return text


def tile_steps(base, iters, ai, bi, reduction, ta, tb, tr, outer_b, stage, out,
               parallel=True) -> tuple:
    """(the steps, the initialiser's split loops -> the nest's loops they follow) of the
    tile of ``build_tile`` followed by the final vectorize / parallelize pass."""
    b = Builder(base)
    aliases = build_tile(b, iters, ai, bi, reduction, ta, tb, tr, outer_b, stage, out)
    finish(b, parallelize=parallel)
    return b.steps, aliases


def build_tile(b: Builder, iters, ai, bi, reduction, ta, tb, tr, outer_b, stage,
               out) -> dict:
    """The steps of one register tile of the reduction into array ``out`` (rows ``ai`` by
    ``ta``, vector columns ``bi`` by ``tb``, the first reduction loop by ``tr`` or whole when
    None; ``outer_b``: columns outermost; ``stage``: the operand whose panel is packed),
    applied to the builder (no final vectorize / parallelize pass); the tile's buffers get
    names that are free in the program. A nest
    that sets the output to a literal just before is fused into the tile loops
    (``tile_init.py``); returns its loops that were split like the nest's (-> the nest's
    loop), whose split factors follow the nest's when the tile is resized."""
    init = find_initialiser(b.program, iters)
    splits = {}
    if ai is not None:
        a0, a1 = split_names(b.program, ai)
        b.step(f"split {ai} by {ta}")
        splits[ai] = (ta, a0, a1)
    b0, b1 = split_names(b.program, bi)
    b.step(f"split {bi} by {tb}")
    splits[bi] = (tb, b0, b1)
    r = reduction[0]
    if tr is None:                   # the whole reduction: a panel is staged at b0
        r0, r1 = None, r
        stage_at = b0 if outer_b or ai is None else None
    else:
        r0, r1 = split_names(b.program, r)
        b.step(f"split {r} by {tr}")
        stage_at = r0
    others = [it for it in iters if it not in (ai, bi) and it not in reduction]
    inner_red = [r1] + reduction[1:]
    if ai is None:
        head, tile = [b0, r0], [b1]
    else:
        head, tile = ([b0, r0, a0] if outer_b else [a0, b0, r0]), [a1, b1]
    if outer_b:                      # b0 outermost of all: its panel is staged once
        others, head = [b0] + others, head[1:]
    order = others + [it for it in head if it] + inner_red + tile
    bubble(b, order)
    aliases = {}
    if init is not None:
        trial = Builder(b.program)
        try:
            fused = fuse_initialiser(trial, init, splits, order)
        except NotApplicable:
            fused = None
        if fused is not None:
            b.program, b.steps = trial.program, b.steps + trial.steps
            aliases = {mine: theirs for mine, theirs in init.mapping.items() if theirs in splits}
            a0, b0 = fused.get(a0, a0) if ai is not None else None, fused.get(b0, b0)
            head = [fused.get(it, it) if it else it for it in head]
            stage_at = fused.get(stage_at, stage_at)
    taken = declared_names(b.program)
    acc = "acc" if "acc" not in taken else fresh(taken, "acc")
    b.step(f"accumulate {out} at {r1} as {acc} in register")
    panel = None
    if stage and stage_at:
        panel = f"{stage}p" if f"{stage}p" not in taken else fresh(taken, f"{stage}p")
        if not b.maybe(f"stage {stage} at {stage_at} as {panel}"):
            panel = None
    for buffer in [acc] + ([panel] if panel else []):
        layout = last_dim_layout(b.program, buffer, b1)
        if layout:
            b.step(layout)
    # a computed broadcast operand does not vary along b: with the rows outermost it is
    # computed once per row panel and serves every column tile (per tile it cost gemm f32
    # a fifth of its time on AVX2)
    at = (a0 if ai is not None and not outer_b else None) or r0 or [it for it in head if it][-1]
    for operand in broadcast_operands(b.program, acc, b1):
        if stage in {e.array for e in ir.walk_expr(operand) if isinstance(e, ir.Access)} \
                or not precompute_operand(b, operand, at, a1 if ai is not None else None):
            break                      # the k-th precompute step holds the k-th operand
    for outer in (a0 if ai is not None else None, b0):
        if outer is not None:          # the last, partial tile gets a loop of its own
            b.maybe(f"partition {outer}")
    if ai is not None:
        b.maybe(f"partition {b0}t")    # the tiles of the last rows, split along b too
        for loop in [l.iterator for l in ir.loops(b.program)]:    # every copy's rows:
            if loop == a1 or loop.startswith(a1 + "t"):           # its tile in registers
                b.maybe(f"unroll {loop}")
    b.step(f"vectorize {b1}")
    prefetch_next_tile(b, acc, out)
    return aliases


def broadcast_operands(program, acc: str, vector_loop: str) -> list:
    """The computed operands that the tile's vector loop broadcasts: in the reduction into
    ``acc``, the largest sub-expressions that read an array and do not change along the
    vector loop (``alpha * A[i, k]`` of ``alpha * A[i, k] * B[k, j]``)."""
    for stmt in ir.assignments(program):
        if stmt.target.array == acc and stmt.op != "=":
            return invariant_operands(stmt.value, vector_loop)
    return []


def precompute_operand(b: Builder, operand, at: str, row_loop) -> bool:
    """``precompute OPERAND at AT`` (False when it does not apply): a broadcast of a
    computed scalar costs a multiply and a shuffle per use, a broadcast of a buffer element
    a load. The buffer's dimension
    over ``row_loop`` (the unrolled rows) goes last, so the rows' operands of one reduction
    step are adjacent, and its copy loops are ordered like it (contiguous stores)."""
    name = fresh(declared_names(b.program), "pre")
    if not b.maybe(f"precompute {print_expr(operand)} at {at} as {name}"):
        return False
    if row_loop is not None:
        layout = last_dim_layout(b.program, name, row_loop)
        if layout:
            b.step(layout)
    copy = next(s for s in ir.assignments(b.program) if s.target.array == name)
    order = [i.name for i in copy.target.indices if isinstance(i, ir.Var)]
    if len(order) == len(copy.target.indices) > 1:
        bubble(b, order)
    return True


def resize_precomputes(base, steps: list, position: int, bi: str) -> list:
    """``steps`` (a tile resized by ``resize_step``) with each ``precompute`` naming its
    operand as the resized splits print it, and the k-th precompute step takes the k-th
    broadcast operand of the reduction, the ``position``-th assignment. The splits alone
    are replayed on ``base`` (they are what changes an operand's indices), unless an
    initialiser was fused into the tile loops: a fusion renames the loops it merges, so then
    every step before the first precompute is replayed and the operands are read from the
    reduction into the register buffer."""
    first = next((k for k, t in enumerate(steps) if t.startswith("precompute ")), None)
    if first is None:
        return steps
    program, vector_loop = base, None
    fused = any(t.startswith("fuse ") for t in steps[:first])
    for text in steps[:first] if fused else steps:
        if text.startswith("split ") and text.split()[1] == bi:
            vector_loop = split_names(program, bi)[1]
        if fused or text.startswith("split "):
            program = apply_step(program, text)
    if fused:
        acc = next(t.split()[-3] for t in reversed(steps[:first]) if t.startswith("accumulate "))
        found = broadcast_operands(program, acc, vector_loop)
    else:
        found = invariant_operands(ir.assignments(program)[position].value, vector_loop)
    operands = iter(print_expr(e) for e in found)
    return [f"precompute {next(operands)}{t[t.rindex(' at '):]}"
            if t.startswith("precompute ") else t for t in steps]


def prefetch_next_tile(b: Builder, acc: str, out: str) -> None:
    """``prefetch OUT at L`` when the register buffer ``acc`` is stored into ``out`` (its tile
    of the output is read before the tile's reduction, or written after it: either way a
    cache miss per row unless fetched ahead): L is the innermost loop around the
    buffer's declaration at which the transformation offers ``out`` (its next iteration
    touches another tile of ``out``, not the same one nor a continuation of it in memory: the
    rows of the next tile lie a row stride away, which the hardware prefetchers miss).
    Derived from the program alone; nothing is added where no such loop exists."""
    program = b.program
    holder, around = None, []

    def find(body, loops):
        nonlocal holder, around
        for s in body:
            if isinstance(s, ir.Loop):
                if any(isinstance(x, ir.Local) and x.name == acc for x in s.body):
                    holder, around = s, loops + [s]
                    return True
                if find(s.body, loops + [s]):
                    return True
        return False
    if not find(program.body, []):
        return
    stores = any(isinstance(s, ir.Assign) and s.target.array == out and
                 any(isinstance(e, ir.Access) and e.array == acc for e in ir.walk_expr(s.value))
                 for s in ir.walk_stmts(holder.body))
    if not stores:
        return
    for loop in reversed(around):
        if PREFETCH.offered(program, out, loop.iterator):
            b.maybe(f"prefetch {out} at {loop.iterator}")
            return

"""Time-tile moves: ``timetile`` of every time loop (a loop over loop nests whose iterator
indexes no array: a stencil's steps), its tile sized from the target's caches and the
program's footprint, then ``vectorize inner``.

While a tile of S steps by W1 [x W2] points runs, the points it keeps live are about
W + 2F + 2 per tiled level (its width, the skew F at both edges and a halo), each holding
the bytes one point of the tiled levels has over every array the steps touch; S of them
are reused from cache once loaded.  The widths are the largest whose live set fits a budget
(half of L1, half of L2 and all of L2: the target's, from sysfs for the native target); the
steps the most of 16, 8, 4, 2 that lean no more than the width (F*S <= W).  One level is
tiled when a width of at least 4 fits, else two, never the innermost loop (it stays whole,
to be vectorized); a level that fits whole is not tiled.  The skew is the least in 1..4 that
the transformation's exact check accepts.  Nothing is fitted to a kernel or an ISA.
"""
from __future__ import annotations

from math import isqrt, prod

from .. import ir
from ..codegen.c_expr import ITEMSIZE
from ..codegen.targets import get_target
from ..interp import array_shape
from ..poly import const_value
from ..transforms.timetile import MAX_DIMS, TIMETILE, time_loops
from .moves import Builder, Move, finish
from .tiling import l1_data_bytes, l2_bytes

MAX_SKEW = 4
STEPS = (16, 8, 4, 2)


def time_tile_moves(program, target=None) -> list:
    """A move per time loop and cache budget whose tile fits (see the module docstring)."""
    target = get_target(target)
    budgets = (("L1", l1_data_bytes(target) // 2), ("L2/2", l2_bytes(target) // 2),
               ("L2", l2_bytes(target)))
    moves, seen = [], set()
    for loop in time_loops(program):
        if _level_extents(loop, 1, program.size_values) is None:
            continue        # an already tiled nest (clipped bounds): skip the costly probes
        factor = least_skew(program, loop)
        for level, budget in budgets:
            shape = time_tile_shape(program, loop, budget, factor)
            if shape is None or shape in seen:
                continue
            seen.add(shape)
            steps, widths, factor = shape
            b = Builder(program)
            sizes = " x ".join(map(str, widths))
            if not b.maybe(f"timetile {loop.iterator} by {steps} x {sizes} skew {factor}"):
                continue
            finish(b, parallelize=False)
            moves.append(Move(f"time tile {steps} x {sizes} skew {factor} ({level})",
                              tuple(b.steps)))
    return moves


def time_tile_shape(program, loop, budget: int, factor):
    """(steps, widths, skew) of the widest tile with skew ``factor`` (see least_skew) whose
    live set fits ``budget``; None when there is none or the factor is None."""
    sizes = program.size_values
    n_steps = const_value(ir.BinOp("-", loop.hi, loop.lo), sizes)
    if factor is None or not n_steps:
        return None
    for depth in range(1, MAX_DIMS):
        extents = _level_extents(loop, depth, sizes)
        if extents is None:
            return None
        cell = _cell_bytes(program, loop, depth, extents)
        side = (budget // cell) if depth == 1 else isqrt(budget // cell)
        width = side - 2 * factor - 2
        if width < 4:
            continue
        if all(width + factor >= e for e in extents):
            return None                  # the tiled levels fit whole: nothing to reuse
        steps = next((s for s in STEPS if factor * s <= width and s < n_steps), None)
        if steps is None:
            return None
        return steps, tuple(min(width, e) for e in extents), factor
    return None


def least_skew(program, loop):
    """The least skew in 1..MAX_SKEW that the transformation's check accepts for this loop
    (probed with a small tile), or None."""
    for factor in range(1, MAX_SKEW + 1):
        if TIMETILE.check(program, (loop.iterator, 2, (4,), factor)) is None:
            return factor
    return None


def _level_extents(loop, depth: int, sizes):
    """The largest extent of each of the first ``depth`` levels over the children, or None
    when a child has fewer perfectly nested levels above its innermost loop or a varying
    extent."""
    out = [0] * depth
    for child in loop.body:
        node = child
        for d in range(depth):
            if not isinstance(node, ir.Loop):
                return None
            n = const_value(ir.BinOp("-", node.hi, node.lo), sizes)
            if n is None:
                return None
            out[d] = max(out[d], n)
            if not any(isinstance(x, ir.Loop) for x in node.body):
                return None              # the innermost loop stays whole (vectorized)
            if d + 1 < depth:
                if len(node.body) != 1:
                    return None
                node = node.body[0]
    return out


def _cell_bytes(program, loop, depth: int, extents) -> int:
    """Bytes one point of the tiled levels holds over every array the steps touch: each
    array's size divided by the extents of its dimensions those levels index."""
    tiled = set()
    for child in loop.body:
        node = child
        for _ in range(depth):
            tiled.add(node.iterator)
            node = node.body[0] if node.body else None
    decls = {d.name: d for d in program.arrays}
    total = 0
    for name, dims in _touched(loop).items():
        decl = decls.get(name)
        if decl is None:
            continue
        shape = array_shape(program, decl)
        size = prod(shape) * ITEMSIZE.get(decl.dtype, 4)
        indexed = prod(n for n, used in zip(shape, dims) if used & tiled)
        total += size // max(1, indexed)
    return max(1, total)


def _touched(loop) -> dict:
    """array -> per dimension, the iterators its indices use (over every access)."""
    out = {}
    for s in ir.walk_stmts(loop.body):
        if isinstance(s, ir.Assign):
            for a in [s.target] + [e for e in ir.walk_expr(s.value) if isinstance(e, ir.Access)]:
                dims = out.setdefault(a.array, [set() for _ in a.indices])
                for k, index in enumerate(a.indices):
                    dims[k] |= set(ir.var_names(index))
    return out


__all__ = ["least_skew", "time_tile_moves", "time_tile_shape"]

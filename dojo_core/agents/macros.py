"""Macro-actions: sequences of legal steps built from generic optimization knowledge.

A macro is a ``Move(label, steps)``: its steps are ordinary step texts, each legal in the
state its predecessors made (they are found by applying them one by one; a macro whose step
is refused is dropped), so a history of macros is an ordinary history.  No kernel's
``.steps`` file is used or known here; the knowledge is the textbook one (the same rules
Ansor / MetaSchedule sketches use):

* ``vectorize inner``: vectorize every innermost loop that can be (unit-stride lanes).
* ``unit stride L``: in the nests of loop L whose innermost loop strides, bubble the loop
  that every access walks with stride 1 innermost and vectorize it (``strides.py``).
* ``parallelize outer``: parallelize every outermost loop that can be.
* ``vectorize inner + prefetch A at P ahead L``: the same after a prefetch of the next row
  where the prefetch candidates offer one (a row loop whose passes restart the hardware
  prefetchers' stream at each row: layernorm's three passes over a 4 KiB row, a page).
* ``vectorize varying xK``: cut the innermost loops whose trip count varies (triangular
  solvers) into blocks of K vectors and a scalar tail, rfactor their reductions, and
  vectorize the blocks (``varying.py``).
* ``time tile S x W skew F (L1|L2)``: time skewing of a stencil's time loop, the tile
  sized for half of the target's L1 or L2 from the program's footprint (``timetiles.py``).
* ``wavefront I J by F``: skew an in-place sweep whose innermost loop J is a chain of
  dependent points (Gauss-Seidel) so that the points of one wavefront, independent of each
  other, run together; F the least that makes them independent (``wavefronts.py``).
* ``pipeline L from M``: software-pipeline a loop whose body runs several passes over a
  row, so that one loop does the arithmetic of a row and the stores of the row before
  (``pipelines.py``), with and without a cache write of the row, split in chunks per
  thread.
* ``cache block p q by B``: B x B blocks of the two innermost loops of a nest whose accesses
  want opposite orders (a transpose), B from the target's L1 (``blocking.py``).
* ``distribute``: fission loops whose body mixes statements and loops, so that reductions
  form perfect nests (an init nest and an update nest); in a loop that holds a
  contraction, a local used on both sides of a cut is expanded first (scalar expansion).
* ``tile a x b x r``: register tiling of a perfect reduction nest ``... a b ... r ...`` with
  a reduction statement ``T[...] op= ...``: split a spatial loop ``a`` by ``ta``, the
  spatial loop ``b`` of ``T``'s last index by ``tb``, the outermost reduction loop by
  ``tr``; bubble the loops (adjacent interchanges) into ``<other loops> a0 b0 r0 r1 <other
  reductions> a1 b1`` (or, "b-outer", ``b0 <other loops> r0 a0 r1 ...``), keep ``T``'s
  tile in registers (accumulate at r1), cut the partial last tiles of ``a`` and ``b`` into
  loops of their own (``partition a0``, ``partition b0``: the full tiles keep constant
  extents at any size), unroll ``a1``, vectorize ``b1``, optionally stage
  an input that ``a`` does not index at ``r0`` (a packed panel), then vectorize inner /
  parallelize outer loops.  The reduction is also left whole (``r/all``: the tile runs all of it, so ``T`` is loaded and stored
  once; the panel is then staged at ``b0``, in the ``b0 a0`` order).
  The tile sizes come from the target and the dtype of ``T`` (``tiling.py``: vector lanes
  from the vector width and the element size, a register budget from the target's vector
  registers, shapes ranked by reuse, reduction blocks that keep the panel in half of L1);
  nothing is fitted to one ISA.
  When ``b``'s extent is not a multiple of the vector lanes (a 3x3 convolution's
  56-wide rows), the tile is also tried transposed: another spatial loop
  ``v`` (the output channels) becomes the vector loop and ``b`` the unrolled one; ``T``'s
  tile and the staged panel are laid out with ``v``'s dimension last (``layout``), so that
  ``v`` is unit-stride in both.
"""
from __future__ import annotations

from ..transforms.base import NotApplicable
from ..transforms.prefetch import PREFETCH
from .moves import (Builder, Move, distribute_steps, finish, parallelize_outer_steps,
                    vectorize_inner_steps)
from .blocking import cache_block_moves
from .labels import tile_sizes
from .pipelines import pipeline_moves
from .strides import unit_stride_moves
from .tile_build import last_dim_layout
from .tiles import tile_moves
from .timetiles import time_tile_moves
from .varying import varying_extent_moves
from .wavefronts import wavefront_moves


def macro_moves(program, tile=True, target=None, threads=None) -> list:
    """Every macro that applies to this state and changes it, tiles sized for ``target``
    (None: this machine's); no parallelizing macros for an evaluator of one thread."""
    moves = []
    b = Builder(program)
    finish(b, parallelize=False)
    if b.steps:
        moves.append(Move("vectorize inner", tuple(b.steps)))
    if threads != 1:
        steps = parallelize_outer_steps(program)
        if steps:
            moves.append(Move("parallelize outer", tuple(steps)))
        b = Builder(program)
        finish(b)
        if b.steps and len(b.steps) > 1:
            moves.append(Move("vectorize inner + parallelize outer", tuple(b.steps)))
    moves.extend(row_prefetch_moves(program, threads))
    moves.extend(unit_stride_moves(program))
    moves.extend(varying_extent_moves(program, target))
    moves.extend(time_tile_moves(program, target))
    moves.extend(cache_block_moves(program, target))
    moves.extend(wavefront_moves(program))
    moves.extend(pipeline_moves(program, threads))
    if tile:
        try:
            moves.extend(tile_moves(program, target, threads))
        except NotApplicable:
            pass
    return moves


def row_prefetch_moves(program, threads=None) -> list:
    """``vectorize inner`` (+ ``parallelize outer`` for more than one thread) after one
    prefetch of the next row (``prefetch A at P ahead L``) as the prefetch candidates offer
    it: a pass P over a row that restarts the hardware prefetchers' stream at each row
    (several passes over the row, or rows apart). A move per candidate: which pass asks
    for the next row best is for the measurements to say."""
    moves = []
    for params in PREFETCH.candidates(program):
        if params[2] is None:
            continue
        b = Builder(program)
        step = PREFETCH.format(params)
        if not b.maybe(step):
            continue
        finish(b, parallelize=threads != 1)
        if len(b.steps) > 1:
            label = "vectorize inner" + (" + parallelize outer" if threads != 1 else "")
            moves.append(Move(f"{label} + {step}", tuple(b.steps)))
    return moves


__all__ = ["Move", "distribute_steps", "last_dim_layout", "macro_moves",
           "parallelize_outer_steps", "row_prefetch_moves", "tile_moves", "tile_sizes",
           "unit_stride_moves", "vectorize_inner_steps"]

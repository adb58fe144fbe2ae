"""The register-tiling macro ``tile a x b x r`` (see ``macros.py`` for the whole picture):
for each perfect reduction nest ``... a b ... r ...`` with a reduction ``T[...] op= ...``,
split ``a``, ``b`` (``T``'s last index) and ``r``, bubble the loops into
``<other loops> a0 b0 r0 r1 <other reductions> a1 b1`` (or "b-outer"), keep ``T``'s tile in
registers, partition the partial last tiles, unroll ``a1``, vectorize ``b1``, prefetch the
next tile of ``T`` where the tile is loaded from it, optionally stage a packed panel (the
steps: ``tile_build.py``); sizes from the target and the dtype (``tiling.py``). One
structure is built (and checked) per pattern of tails, then resized. ``tile all`` composes
the first ranked tiles of every nest in one move (a chain of GEMMs, PolyBench 2mm/3mm).
"""
from __future__ import annotations

from itertools import product

from .. import ir
from ..codegen.c_expr import ITEMSIZE
from ..codegen.targets import get_target
from ..transforms import apply_step
from ..transforms.base import NotApplicable
from ..transforms.scope import declared_dtype
from .dots import dot_tile_moves
from .moves import Builder, Move, distribute_steps, finish, loop_extent, parents, uses
from .tile_build import (build_tile, last_dim_layout, resize_precomputes, resize_step,
                         tile_steps)
from .tiling import reduction_blocks, register_tiles, row_tiles

MAX_NESTS = 4        # reduction nests tiled per state (a chain of GEMMs: 3mm has three)
CHAIN_RANKS = 3      # tile shapes tried for a whole chain (the model's first three)


def _perfect_reduction_nests(program) -> list:
    """[(chain of loops outer to inner, statement)] for perfect nests ending in one reduction
    over at least one of the chain's loops (``D[i, j] *= beta`` reduces over none), except
    the partial tiles a split left (a loop running to ``min(..)``, a tile's leftover is not
    retiled) and nests with an annotated loop (annotated loops are not interchanged)."""
    parent_of, found = parents(program), []
    for stmt in ir.assignments(program):
        if stmt.op == "=":
            continue
        chain, node = [], parent_of[id(stmt)]
        while node is not None and len(node.body) == 1:
            chain.append(node)
            node = parent_of[id(node)]
        reduces = any(not any(uses(i, loop.iterator) for i in stmt.target.indices)
                      for loop in chain)
        tail = any(isinstance(loop.hi, ir.Call) and loop.hi.func == "min" for loop in chain)
        annotated = any(loop.annotations for loop in chain)    # no interchange would apply
        if len(chain) >= 2 and reduces and not tail and not annotated:
            found.append((list(reversed(chain)), stmt))
    return found


def tile_moves(program, target=None, threads=None) -> list:
    """Register-tiling macros for each perfect reduction nest (see the module docstring),
    sized for ``target`` (a Target, a target name, or None for this machine's); with
    ``threads`` 1 the tiles are not parallelized (an OpenMP region around the vector tile
    is pure overhead there: 0.69x on PolyBench gemm f32 with AVX-512).
    The loop structure is built (and checked) once per variant; the tile sizes are then
    substituted into its split steps (agents replay every move before measuring it).
    Where distributing with each temp expanded once leaves a smaller temp than the full
    distribution, the tiles of that structure come too (labelled "... local")."""
    target = get_target(target)
    full = distribute_steps(program)
    moves = _nest_tile_moves(program, full, target, threads)
    once = distribute_steps(program, expand_once=True) \
        if any(t.startswith("expand ") for t in full) else full
    if once != full:
        moves += [Move(m.label + " local", m.steps, m.kind, m.bonus)
                  for m in _nest_tile_moves(program, once, target, threads)]
    return moves


def _nest_tile_moves(program, pre, target, threads) -> list:
    """The tile moves of every perfect reduction nest of ``program`` after the steps ``pre``
    (a distribution)."""
    base = program
    for text in pre:
        base = apply_step(base, text)
    moves, firsts = [], []
    parallel = threads != 1
    for chain, stmt in _perfect_reduction_nests(base)[:MAX_NESTS]:
        iters = [l.iterator for l in chain]
        spatial = [it for it in iters if any(uses(e, it) for e in stmt.target.indices)]
        reduction = [it for it in iters if it not in spatial]
        last = stmt.target.indices[-1] if stmt.target.indices else None
        bs = [it for it in spatial if last is not None and uses(last, it)]
        if not reduction or not bs:
            continue
        itemsize = ITEMSIZE.get(declared_dtype(base, stmt.target.array), 4)
        pairs = _tile_pairs(base, stmt, spatial, bs[-1], target, itemsize)
        for ai, bi in pairs:
            found = _tile_variants(base, pre, iters, stmt, reduction, ai, bi, target, itemsize,
                                   parallel)
            if not found and ai is not None:     # a triangular nest: b's bounds depend on a
                ai = None
                found = _tile_variants(base, pre, iters, stmt, reduction, None, bi, target,
                                       itemsize, parallel)
            if ai is None or not found:       # a row reduction: dot products over r
                found += dot_tile_moves(base, pre, iters, stmt, reduction, bi, target,
                                        itemsize, parallel)
            if found and not any(f[0] == iters for f in firsts):
                ranked = [(ta, tb, blocks[0] if blocks else None) for ta, tb, blocks, _ in
                          _tile_sizes(base, ai, bi, reduction, target, itemsize)]
                column = _column_operand(stmt, ai)
                firsts.append((iters, ai, bi, reduction, ranked, stmt.target.array, column,
                               _strided(base, column, bi)))
            moves.extend(found)
    if len(firsts) > 1:
        moves = _tile_chain(base, pre, firsts, parallel) + moves
    return moves


SWAP_REUSE_GAIN = 1.25


def _tile_pairs(base, stmt, spatial, bi, target, itemsize) -> list:
    """The (row iterator, vector iterator) choices of a nest whose output's last index uses
    ``bi``: (``_row_iterator``, bi) first. Where bi's extent is not a multiple of the vector
    lanes, also every (bi, v) for a spatial v whose extent is; where it is, those (bi, v)
    whose operands each vary with rows or columns only and whose best register tile
    reuses SWAP_REUSE_GAIN times more (``tiling.register_tiles``), ahead of it: vectors
    along another iterator than the output's last index cost a staged, transposed operand
    and a transposed accumulator, so the model must favour them clearly. On AVX2, conv2d's
    56 columns of w take tiles of one vector by f rows (reuse 1.8), its 64 filters tiles of
    2 vectors by 4 w rows (reuse 2.7)."""
    lanes = target.lanes(itemsize)
    ais = [it for it in spatial if it != bi]
    first = (_row_iterator(stmt, ais, bi), bi)
    n = loop_extent(base, bi)
    swapped = [(bi, v) for v in ais if (loop_extent(base, v) or 0) % lanes == 0]
    if n is not None and n % lanes:
        return [first] + swapped

    def reuse(pair):
        a, b = pair
        return register_tiles(target, itemsize, loop_extent(base, a),
                              loop_extent(base, b))[0].reuse if a else 0.0
    bar = SWAP_REUSE_GAIN * reuse(first)
    scored = [(reuse(p), p) for p in swapped if not _crossed(stmt, *p)]
    better = sorted(((r, p) for r, p in scored if r > bar), key=lambda rp: -rp[0])
    return [p for _, p in better] + [first]


def _crossed(stmt, a, b) -> bool:
    """Whether an operand read by ``stmt`` uses both ``a`` and ``b``."""
    return any(any(uses(x, a) for x in e.indices) and any(uses(x, b) for x in e.indices)
               for e in ir.walk_expr(stmt.value) if isinstance(e, ir.Access))


def _row_iterator(stmt, ais, bi):
    """The tile's row iterator among the spatial ``ais`` (None if there is none): the
    innermost that no operand read by ``stmt`` uses together with ``bi``, else the
    innermost. Then every operand varies with the rows or with the columns, not both, and is
    loaded once per row (a broadcast) or once per column vector per reduction step: for
    conv2d (Y[f, h, w] += X[c, h + kh, w + kw] * Wt[f, c, kh, kw]) rows of f reuse each X
    vector, where rows of h (the innermost) would load one X vector per multiply-add."""
    if not ais:
        return None
    return ([a for a in ais if not _crossed(stmt, a, bi)] or ais)[-1]


def _tile_sizes(base, ai, bi, reduction, target, itemsize) -> list:
    """[(ta, tb, [tr, ...], rank)] for one (a, b) choice, best first (``tiling.py``)."""
    n_b, n_r = loop_extent(base, bi), loop_extent(base, reduction[0])
    if ai is None:
        shapes = row_tiles(target, itemsize, n_b)
    else:
        shapes = register_tiles(target, itemsize, loop_extent(base, ai), n_b)
    sizes = []
    for rank, shape in enumerate(shapes):
        if n_b is not None and shape.cols >= n_b:
            continue
        blocks = reduction_blocks(target, itemsize, shape.cols)
        # a reduction whose whole panel fits the blocks' room is not blocked: a block
        # would only reload the tile's accumulators once more per block
        blocks = [b for b in blocks if n_r is None or b < n_r] \
            if n_r is None or n_r > blocks[0] else []
        sizes.append((shape.rows if ai else None, shape.cols, blocks, rank))
    return sizes


def _column_operand(stmt, ai):
    """The first (by name) array read by ``stmt`` that does not vary with the tile's rows
    ``ai``: the operand whose panel a tile may stage."""
    found = sorted({e.array for e in ir.walk_expr(stmt.value) if isinstance(e, ir.Access)
                    and (ai is None or not any(uses(i, ai) for i in e.indices))})
    return found[0] if found else None


def _strided(base, column, bi) -> bool:
    """Whether the column operand is not unit-stride along the vector iterator ``bi``."""
    return column is not None and last_dim_layout(base, column, bi) is not None


def _tile_variants(base, pre, iters, stmt, reduction, ai, bi, target, itemsize,
                   parallel=True) -> list:
    """The tile moves of one (a, b) choice: loop orders x staged input x sizes."""
    column = _column_operand(stmt, ai)
    sizes = _tile_sizes(base, ai, bi, reduction, target, itemsize)
    if not sizes:
        return []
    extents = (loop_extent(base, ai) if ai else None, loop_extent(base, bi),
               loop_extent(base, reduction[0]))

    def signature(ta, tb, tr):
        """Which of the splits leave a tail: the steps that apply (unroll, vectorize of a
        constant extent) differ with it, so each signature gets a structure of its own."""
        return tuple(n is not None and f is not None and n % f != 0
                     for n, f in zip(extents, (ta, tb, tr)))

    position = next(k for k, a in enumerate(ir.assignments(base)) if a is stmt)
    moves = []
    # a column operand that is not unit-stride in b is only worth its vector loads staged
    # (with b's dimension moved last)
    strided = _strided(base, column, bi)
    for whole, outer_b, stage in product((False, True), (False, True) if ai else (False,),
                                         ([] if strided else [None]) + [column] * bool(column)):
        if stage and whole and ai is not None and not outer_b:
            continue                   # a whole reduction, rows outer: no loop to stage at
        built = {}
        for ta, tb, blocks, rank in sizes:
            for k, tr in enumerate([None] if whole else blocks):
                sig = signature(ta, tb, tr)
                if sig not in built:
                    try:
                        built[sig] = tile_steps(base, iters, ai, bi, reduction, ta, tb, tr,
                                                outer_b, stage, stmt.target.array, parallel)
                    except (NotApplicable, ValueError):
                        built[sig] = None
                if built[sig] is None:
                    continue
                steps, aliases = built[sig]
                factors = {ai: ta, bi: tb, reduction[0]: tr}
                factors.update({mine: factors[theirs] for mine, theirs in aliases.items()})
                sized = resize_precomputes(base, [resize_step(t, factors) for t in steps],
                                           position, bi)
                label = (f"tile {ai}/{ta} x " if ai else "tile ") + \
                    f"{bi}/{tb} x {reduction[0]}/{'all' if whole else tr}" + \
                    (" b-outer" if outer_b else "") + (f" stage {stage}" if stage else "")
                moves.append(Move(label, tuple(pre) + tuple(sized), bonus=-0.1 * (rank + k)))
    return moves


def _tile_chain(base, pre, firsts, parallel) -> list:
    """``tile all`` moves: the tiles of one rank of every nest, one nest after the other,
    then one vectorize / parallelize pass; per rank (the first ``CHAIN_RANKS`` of the
    model's order, which measurement may not confirm), one move with blocked reductions and
    one with whole ones, each in two forms: every nest in its own form (rows outermost,
    unless its column operand is strided along the vectors: then columns outermost with
    that operand's panel staged, the only form its single tiles take), and every nest with
    rows in the staged form. On PolyBench 2mm f64 with AVX2 the first GEMM is fastest rows
    outermost, the second, whose vectors run along its rows, only staged.
    ``firsts`` holds (iters, ai, bi, reduction, ranked sizes [(ta, tb, tr)], target array,
    column operand, whether it is strided along bi) per nest."""
    moves, seen = [], set()
    for rank, whole, staged in product(range(CHAIN_RANKS), (False, True), (False, True)):
        chosen = [(iters, ai, bi, red, *ranked[min(rank, len(ranked) - 1)], array,
                   column if ai and column and (staged or strided) else None)
                  for iters, ai, bi, red, ranked, array, column, strided in firsts]
        label = "tile all " + " ; ".join(
            (f"{ai}/{ta} x " if ai else "") +
            f"{bi}/{tb} x {red[0]}/{'all' if whole or tr is None else tr}" +
            (f" b-outer stage {panel}" if panel else "")
            for _, ai, bi, red, ta, tb, tr, _, panel in chosen)
        if label in seen:
            continue
        seen.add(label)
        b = Builder(base)
        try:
            for iters, ai, bi, reduction, ta, tb, tr, array, panel in chosen:
                build_tile(b, iters, ai, bi, reduction, ta, tb, None if whole else tr,
                           panel is not None, panel, array)
            finish(b, parallelize=parallel)
        except (NotApplicable, ValueError):
            continue
        moves.append(Move(label, tuple(pre) + tuple(b.steps)))
    return moves

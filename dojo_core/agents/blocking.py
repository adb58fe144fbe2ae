"""The cache-blocking macro: tile the two innermost loops of a perfect nest whose accesses
want opposite loop orders (a transpose: ``Y[i, j] = X[j, i]`` walks Y with stride 1 along j
and X along i), so that the lines each block touches stay in L1 until all of their elements
are used.  No loop order serves both accesses; blocks of B x B do:

    for i in 0..M:                   for i0 in 0..M // B:
      for j in 0..N:          ==>      for j0 in 0..N // B:
        Y[i, j] = X[j, i]                for i1 in 0..B:
                                           for j1 in 0..B:
                                             Y[B*i0 + i1, B*j0 + j1] = X[B*j0 + j1, B*i0 + i1]

    split p by B, split q by B, interchange p1 q0     (each step checked), then vectorize inner

B is the largest power of two (at least 4) for which the block of every array the nest
touches fits half of the target's L1 (its element sizes from the declarations), and its
half: Polly's default tiling of such nests, sized from the target instead of a constant.
Reductions are left to the register-tiling macro.
"""
from __future__ import annotations

from .. import ir
from ..codegen.c_expr import ITEMSIZE
from ..codegen.targets import get_target
from ..transforms import scope
from ..transforms.split import split_names
from ..transforms.util import accesses_in
from .moves import Builder, Move, finish, loop_extent
from .state_analysis import stride_kind
from .strides import perfect_chains
from .tiling import l1_data_bytes

MIN_BLOCK = 4


def cache_block_moves(program, target=None) -> list:
    """One move per block size for every perfect nest whose innermost two loops p, q have
    an access unit-stride along q and another unit-stride along p but strided along q."""
    target = get_target(target)
    moves, seen = [], set()
    for chain in perfect_chains(program):
        p, q = chain[-2], chain[-1]
        if p.annotations or q.annotations or not _conflicting(p, q):
            continue
        for block in block_sizes(program, q, l1_data_bytes(target)):
            extents = [loop_extent(program, l.iterator) for l in (p, q)]
            if any(e is None or e < 2 * block for e in extents):
                continue
            b = Builder(program)
            p0, p1 = split_names(program, p.iterator)
            if not b.maybe(f"split {p.iterator} by {block}"):
                continue
            q0, _ = split_names(b.program, q.iterator)
            if not (b.maybe(f"split {q.iterator} by {block}")
                    and b.maybe(f"interchange {p1} {q0}")):
                continue
            finish(b, parallelize=False)
            key = tuple(b.steps)
            if key not in seen:
                seen.add(key)
                moves.append(Move(f"cache block {p.iterator} {q.iterator} by {block}", key))
    return moves


def block_sizes(program, loop, l1_bytes: int) -> list:
    """The largest power of two B >= 4 whose B x B block of every array accessed in the loop
    fits half of L1, and B / 2 when that is at least 4."""
    arrays = {a.array for a in accesses_in(loop.body)}
    per_element = sum(ITEMSIZE.get(scope.declared_dtype(program, a), 8) for a in arrays)
    block = MIN_BLOCK
    if per_element * block * block > l1_bytes // 2:
        return []
    while per_element * (2 * block) ** 2 <= l1_bytes // 2:
        block *= 2
    return [b for b in (block, block // 2) if b >= MIN_BLOCK]


def _conflicting(outer, inner) -> bool:
    """Only assignments, some access unit-stride along the inner loop and some access
    strided along it but unit-stride along the outer one."""
    if any(not isinstance(s, ir.Assign) or s.op != "=" for s in inner.body):
        return False
    accesses = accesses_in(inner.body)
    return any(stride_kind(a, inner.iterator) == "unit" for a in accesses) and any(
        stride_kind(a, inner.iterator) == "strided" and stride_kind(a, outer.iterator) == "unit"
        for a in accesses)


__all__ = ["block_sizes", "cache_block_moves"]

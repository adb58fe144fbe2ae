"""The macro for innermost loops whose trip count varies with an outer loop: triangular
solvers and factorizations (PolyBench trisolv's ``for j in 0..i``, cholesky, lu, durbin).

``vectorize`` needs a constant extent, so ``vectorize inner`` leaves such loops scalar, and
gcc -O3 does not vectorize their dot products either (that reassociates the sum). The
macro cuts each one into vector-wide blocks and a short scalar tail, from legal steps:

    for j in 0..i:                          for j0 in 0..i // F:
      x[i] += -L[i, j] * x[j]      ==>        for j1 in 0..F vector:
                                                 xr[j1] += -L[i, F*j0 + j1] * x[F*j0 + j1]
                                            (xr summed into x[i]; the last i % F in a tail)

    split L by F, partition L0           (full blocks of constant extent F, and the tail)
    rfactor L1 as T (a reduction)        (one partial per lane, combined once after L0)
    vectorize L1

F is one or two vectors of the statements' widest element type on the target (lanes from
its vector width); nothing is fitted to a kernel, dtype or ISA. A loop whose accesses stride
is not vectorized (a gather per lane costs more than the scalar loop); when it is one
reduction into an element it does not index (nussinov's ``table[i, j] max= table[i, k] +
table[k + 1, j]``), it is split, partitioned, rfactored and its F-wide blocks unrolled: F
independent partial reductions in flight instead of one chain through that element.
"""
from __future__ import annotations

from .. import ir
from ..codegen.c_expr import ITEMSIZE
from ..codegen.targets import get_target
from ..transforms import scope
from ..transforms.base import NotApplicable
from ..transforms.split import split_names
from .moves import Builder, Move, finish, loop_extent, uses
from .state_analysis import analyze

BLOCK_VECTORS = (1, 2)      # F: this many vectors of lanes, best-ranked first


def varying_extent_moves(program, target=None) -> list:
    """One move per block width F: every innermost loop of varying extent whose accesses
    are unit-stride or invariant is split by F, partitioned, rfactored when it reduces into
    an element it does not index, and vectorized; then the usual vectorize pass. Moves
    whose steps would be refused are left out; none when no loop qualifies."""
    target = get_target(target)
    candidates = _candidates(program)
    if not candidates:
        return []
    moves, seen = [], set()
    for rank, vectors in enumerate(BLOCK_VECTORS):
        for chains in (False, True):          # with the strided reductions' chains or not
            b = Builder(program)
            for iterator, itemsize, strided in candidates:
                if chains or not strided:
                    _vectorize_blocks(b, iterator, vectors * target.lanes(itemsize), strided)
            if not b.steps:
                continue
            finish(b, parallelize=False)
            key = tuple(b.steps)
            if key not in seen:
                seen.add(key)
                label = f"vectorize varying x{vectors}" + (" + strided chains" if chains else "")
                moves.append(Move(label, key, bonus=-0.1 * rank - 0.05 * chains))
    return moves


def _candidates(program) -> list:
    """(iterator, widest element size, strided) of the unannotated innermost loops without
    a constant extent whose accesses are all unit-stride or invariant in them, some
    unit-stride (strided False), or that hold one reduction into an element they do not
    index with some access strided (strided True)."""
    loops = analyze(program).loops
    found = []
    for loop in ir.loops(program):
        if loop.annotations or any(not isinstance(s, ir.Assign) for s in loop.body):
            continue
        info = loops.get(loop.iterator)
        if info is None or loop_extent(program, loop.iterator) is not None:
            continue
        strided = bool(info.counts["strided"])
        if strided and not _reduction_into_one_element(loop):
            continue
        if not strided and not info.counts["unit"]:
            continue
        sizes = [ITEMSIZE.get(scope.declared_dtype(program, a.array), 8)
                 for s in loop.body for a in [s.target] + list(ir.walk_expr(s.value))
                 if isinstance(a, ir.Access)]
        found.append((loop.iterator, max(sizes, default=8), strided))
    return found


def _reduction_into_one_element(loop) -> bool:
    stmt = loop.body[0]
    return len(loop.body) == 1 and stmt.op != "=" and \
        not any(uses(i, loop.iterator) for i in stmt.target.indices)


def _vectorize_blocks(b: Builder, iterator: str, factor: int, strided: bool = False) -> None:
    """Split, partition, (rfactor,) vectorize one loop; a strided one (a gather per lane
    would cost more than its scalar loop) is rfactored and unrolled instead: ``factor``
    independent partial reductions in flight rather than one dependent chain. The builder
    is unchanged when a step is refused."""
    trial = Builder(b.program)
    outer, inner = split_names(trial.program, iterator)
    try:
        trial.step(f"split {iterator} by {factor}")
        trial.step(f"partition {outer}")
        loop = next(l for l in ir.loops(trial.program) if l.iterator == inner)
        if _reduction_into_one_element(loop):
            name = scope.default_name(trial.program, f"{loop.body[0].target.array}r")
            (trial.step if strided else trial.maybe)(f"rfactor {inner} as {name}")
        trial.step(f"{'unroll' if strided else 'vectorize'} {inner}")
    except (NotApplicable, StopIteration):
        return
    b.program, b.steps = trial.program, b.steps + trial.steps

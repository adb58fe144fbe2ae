"""The unit-stride macro: make the loop along which every access is contiguous the innermost
loop of its nest, and vectorize it.

A column softmax runs each pass down a column (``for j: for i: .. X[i, j]``): the inner
loops stride by a row, so nothing vectorizes, while ``j`` walks every access with stride 1.
The textbook remedy (loop permutation for spatial locality, as in LLVM's loop interchange
and Polly's schedules) is built from legal steps: the scalar locals of a loop get one slot
per iteration (``expand``), the loop's body is cut into perfect nests (``distribute``), and
in each nest whose innermost loop strides, a loop that is unit-stride for every access
of the nest is bubbled innermost (adjacent interchanges, each checked) and vectorized.
Where only private buffers (temps, locals) stride along that loop, they are laid out with
its dimension last first (``layout``: PolyBench adi's ``p[i, j]`` and ``q[i, j]``, whose
sweep along j runs for every i).

    for j in 0..M:                      for j2 in 0..M:
      mx = -inf                           mx[j2] = -inf
      for i in 0..N:            ==>     for i in 0..N:
        mx max= X[i, j]                   for j3 in 0..M vector:
      ...                                   mx[j3] max= X[i, j3]
                                        ...
Nothing here knows a kernel, a dtype or an ISA: the strides come from the accesses.
"""
from __future__ import annotations

from .. import ir
from ..transforms.base import NotApplicable
from ..transforms.util import accesses_in
from .moves import Builder, Move, bubble, distribute_steps, finish
from .state_analysis import analyze, stride_kind
from .tile_build import last_dim_layout


def unit_stride_moves(program) -> list:
    """One move per loop that holds strided nests and scalar locals or several nests
    (a pass structure), when bubbling unit-stride loops innermost changes some nest; each
    move's steps are legal in turn and end with the usual vectorize pass (no parallelize:
    the other macros add it)."""
    moves, seen = [], set()
    for outer in ir.loops(program):
        if not _strided_nest_inside(program, outer):
            continue
        b = Builder(program)
        for stmt in outer.body:
            if isinstance(stmt, ir.Local) and not stmt.dims:
                b.maybe(f"expand {stmt.name} at {outer.iterator}")
        for text in distribute_steps(b.program):
            b.step(text)
        if not _bubble_unit_stride(b):
            continue
        finish(b, parallelize=False)
        key = tuple(b.steps)
        if key not in seen:
            seen.add(key)
            moves.append(Move(f"unit stride {outer.iterator}", key))
    return moves


def _strided_nest_inside(program, outer) -> bool:
    loops = analyze(program).loops
    return any(loops[l.iterator].counts["strided"] and _innermost(l)
               for l in ir.loops([outer]) if l.iterator in loops)


def _innermost(loop) -> bool:
    return not any(isinstance(s, ir.Loop) for s in loop.body)


def perfect_chains(program) -> list:
    """[loops outer to inner] of every perfect nest: each loop's body is the next loop,
    the last holds statements only."""
    chains = []

    def visit(body, chain):
        for stmt in body:
            if not isinstance(stmt, ir.Loop):
                continue
            inner = chain + [stmt] if len(body) == 1 and chain else [stmt]
            if _innermost(stmt):
                if len(inner) >= 2:
                    chains.append(inner)
            else:
                visit(stmt.body, inner)
    visit(program.body, [])
    return chains


def _bubble_unit_stride(b: Builder) -> bool:
    """Bubble, in every perfect nest whose innermost loop strides, the innermost loop that
    is unit-stride for every access of the nest; True when some nest changed."""
    changed, relaid = False, set()
    for _ in range(16):
        loops = analyze(b.program).loops
        for chain in perfect_chains(b.program):
            inner = loops.get(chain[-1].iterator)
            if inner is None or not inner.counts["strided"] or chain[-1].annotations:
                continue
            unit = [l.iterator for l in chain[:-1] if l.iterator in loops
                    and not loops[l.iterator].counts["strided"]
                    and loops[l.iterator].counts["unit"] and not l.annotations]
            trial = Builder(b.program)
            if not unit:
                moved = _relayout(trial, chain, relaid)
                if moved is None:
                    continue
                unit = [moved]
            order = [l.iterator for l in chain if l.iterator != unit[-1]] + [unit[-1]]
            try:
                bubble(trial, order)
            except NotApplicable:
                continue
            b.program, b.steps = trial.program, b.steps + trial.steps
            changed = True
            break
        else:
            return changed
    return changed


def _relayout(b: Builder, chain, relaid: set) -> str:
    """The outer loop of the chain that is unit-stride for every access once the private
    buffers (temps and locals) it strides through are laid out with its dimension last,
    those ``layout`` steps applied to ``b`` and the buffers added to ``relaid``; None
    (``b`` unchanged) when there is none. An interface array's layout is the caller's, and
    a buffer in ``relaid`` keeps the layout an earlier nest chose (two nests that want
    opposite layouts would otherwise flip it back and forth), so a loop striding through
    one of those is never chosen."""
    accesses = accesses_in(chain[-1].body)
    interface = {d.name for d in b.program.arrays if d.kind != "temp"}
    for loop in reversed(chain[:-1]):
        kinds = [stride_kind(a, loop.iterator) for a in accesses]
        strided = {a.array for a, k in zip(accesses, kinds) if k == "strided"}
        if loop.annotations or not strided or strided & (interface | relaid) \
                or "unit" not in kinds:
            continue
        trial = Builder(b.program)
        steps = [last_dim_layout(b.program, name, loop.iterator) for name in sorted(strided)]
        if None in steps or not all(trial.maybe(step) for step in steps):
            continue
        inner = next(l for l in ir.loops(trial.program) if l.iterator == chain[-1].iterator)
        if any(stride_kind(a, loop.iterator) == "strided" for a in accesses_in(inner.body)):
            continue
        b.program, b.steps = trial.program, b.steps + trial.steps
        relaid.update(strided)
        return loop.iterator
    return None

"""Wavefront moves: ``wavefront I J by F`` of a perfect pair whose innermost loop J is a chain
(it carries a dependence between plain assignments, and I and J cannot simply be swapped),
F the least in 1..MAX_FACTOR that the transformation's exact check accepts and that leaves
the new inner loop (I, the points of one wavefront) carrying no dependence; then
``vectorize inner`` where it applies.

An in-place Gauss-Seidel sweep (``A[i, j] = f(A[i, j - 1], A[i - 1, j + 1], ...)``) runs
each row as one chain of dependent points: a point waits for its left neighbour's
arithmetic to finish. The points of one wavefront ``j + F*i`` depend on none of each other,
so the processor overlaps them however deep its pipeline is. Reductions (``+=`` and the
like) are left to the moves that split their chains (rfactor, the varying-extent move), and
a pair that interchanges legally gets an independent inner loop without any skew. The move
is derived from the dependences alone: nothing is fitted to a kernel or a machine.
"""
from __future__ import annotations

from .. import ir
from ..transforms.annotate import carries_dependence
from ..transforms.interchange import INTERCHANGE
from ..transforms.util import find_loop
from ..transforms.wavefront import WAVEFRONT
from .moves import Builder, Move, finish

MAX_FACTOR = 4


def wavefront_moves(program) -> list:
    """A move per perfect pair whose inner loop is such a chain (see the module docstring)."""
    moves = []
    for outer in ir.loops(program):
        inner = _chain_below(program, outer)
        if inner is None:
            continue
        factor = independent_factor(program, outer.iterator, inner.iterator)
        if factor is None:
            continue
        b = Builder(program)
        if not b.maybe(f"wavefront {outer.iterator} {inner.iterator} by {factor}"):
            continue
        finish(b, parallelize=False)
        moves.append(Move(f"wavefront {outer.iterator} {inner.iterator} by {factor}",
                          tuple(b.steps)))
    return moves


def independent_factor(program, outer: str, inner: str):
    """The least F in 1..MAX_FACTOR for which ``wavefront outer inner by F`` is legal and its
    points (the loop ``outer`` inside each wavefront) carry no dependence; None if none is."""
    for factor in range(1, MAX_FACTOR + 1):
        params = (outer, inner, factor)
        if WAVEFRONT.check(program, params) is not None:
            continue
        skewed = WAVEFRONT.apply(program, params)
        _, path = find_loop(skewed, outer)
        if not carries_dependence(skewed, outer, path):
            return factor
    return None


def _chain_below(program, outer):
    """The loop perfectly nested in ``outer`` that is innermost, unannotated, assigns with
    ``=`` only and carries a dependence, when the pair cannot be interchanged; else None."""
    if outer.annotations or len(outer.body) != 1 or not isinstance(outer.body[0], ir.Loop):
        return None
    inner = outer.body[0]
    if inner.annotations or not inner.body or \
            any(not isinstance(s, ir.Assign) or s.op != "=" for s in inner.body):
        return None
    _, path = find_loop(program, inner.iterator)
    if not carries_dependence(program, inner.iterator, path):
        return None
    if INTERCHANGE.check(program, (outer.iterator, inner.iterator)) is None:
        return None
    return inner


__all__ = ["independent_factor", "wavefront_moves"]

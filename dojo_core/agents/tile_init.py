"""The register-tile macro's initialiser fusion: the nest that sets a reduction's output to a
literal before the reduction (``C[i, j] = 0`` cut apart from ``C[i, j] += ..`` by the
distribution) is split and ordered like the tiled nest and fused into its tile loops, so
that it runs just before the tile's reduction on the tile's own elements. ``accumulate``
then starts the register tile at the literal instead of storing it and loading it back
(``accumulate.py``): one pass over the output instead of three.

    for i in 0..N:                         for i0 in 0..N // 4:
      for j in 0..M:                          for j0 in 0..M // 16:
        C[i, j] = 0                             for i1' in 0..4:
    for i0 in 0..N // 4:             ==>          for j1' in 0..16:
      for j0 in 0..M // 16:                         C[4*i0 + i1', 16*j0 + j1'] = 0
        for k in 0..K: ...                        for k in 0..K: ...

Derived from the program alone: any literal, any dimensionality; the fused loops keep the
initialiser's names (``fuse`` keeps its first loop's), which the caller maps back.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..affine import simplify
from ..transforms.split import split_names
from .moves import Builder, bubble, parents


@dataclass(frozen=True)
class Initialiser:
    """A nest just before a reduction nest that stores one literal into exactly the
    elements the reduction's loops index: ``mapping`` takes each of its iterators to the
    reduction nest's iterator that indexes the same dimension over the same range."""
    mapping: dict


def find_initialiser(program, iters: list):
    """The Initialiser of the reduction nest whose loops are ``iters`` (outermost first,
    a perfect nest around one reduction statement), or None: the statement just before the
    nest's outermost loop must be a perfect nest around ``T[v1, .., vn] = literal`` (T the
    reduction's output, each vd the iterator of one of its loops) whose loops have the
    bounds of the reduction loops that index the same dimensions."""
    loops = {l.iterator: l for l in ir.loops(program)}
    if not all(it in loops for it in iters):
        return None
    stmt = loops[iters[-1]].body[0]
    parent = parents(program).get(id(loops[iters[0]]))
    body = parent.body if parent is not None else program.body
    k = next(n for n, s in enumerate(body) if s is loops[iters[0]])
    if not isinstance(stmt, ir.Assign) or k == 0:
        return None
    head, own = body[k - 1], []
    while isinstance(head, ir.Loop) and len(head.body) == 1:
        own.append(head)
        head = head.body[0]
    if not (own and isinstance(head, ir.Assign) and head.op == "="
            and isinstance(head.value, ir.Const) and head.target.array == stmt.target.array
            and len(own) == len(head.target.indices)):
        return None
    by_name = {l.iterator: l for l in own}
    mapping = {}
    for mine, theirs in zip(head.target.indices, stmt.target.indices):
        if not (isinstance(mine, ir.Var) and isinstance(theirs, ir.Var)
                and mine.name in by_name and theirs.name in iters
                and mine.name not in mapping):
            return None
        a, b = by_name[mine.name], loops[theirs.name]
        if simplify(a.lo) != simplify(b.lo) or simplify(a.hi) != simplify(b.hi):
            return None
        mapping[mine.name] = theirs.name
    return Initialiser(mapping)


def fuse_initialiser(b: Builder, init: Initialiser, splits: dict, order: list) -> dict:
    """Split the initialiser's loops as the nest's were (``splits``: the nest's iterator
    -> (factor, outer name, inner name)), order them like the nest's loops ``order`` (outer
    to inner, after the splits) and fuse them into the nest's loops that precede its first
    loop the initialiser has no counterpart of. Returns the fused loops' names (the nest's
    loop -> the initialiser's, which the fused loop keeps). Raises NotApplicable (through
    the builder) when a step is refused; the caller uses a trial builder."""
    names = {}
    for mine, theirs in init.mapping.items():
        if theirs in splits:
            factor, outer, inner = splits[theirs]
            names[outer], names[inner] = split_names(b.program, mine)
            b.step(f"split {mine} by {factor}")
        else:
            names[theirs] = mine
    bubble(b, [names[x] for x in order if x in names])
    fused = {}
    for x in order:
        if x not in names:
            break
        b.step(f"fuse {names[x]} {x}")
        fused[x] = names[x]
    return fused

"""Footprints: the bounding box of the elements of one array that a region of a loop nest
touches, for one iteration of the loops around the region (shared by stage and accumulate).

A region is a list of statements (a loop's body for `stage`, the loop itself for
`accumulate`). Its *inner* iterators are those of the loops inside the region; the *outer*
ones are those of the loops around it. For each dimension d of the array:

    offset_d   the index with every inner iterator at its lower bound: an expression of the
               outer iterators and sizes, the smallest index the region touches
    extent_d   1 + max(index - offset_d) over the region, maximised over the outer
               iterations: a constant at the program's sizes

so every access `A[e]` of the region is `A[offset + (e - offset)]` with 0 <= e - offset <
extent. Dimensions of extent 1 are dropped from the local buffer.

The box is derived from the affine forms of the indices (cheap, no islpy) when every inner
loop has a lower bound free of inner iterators, a constant (maximal) extent, is never empty,
and the indices are linear in the inner iterators (a negative coefficient needs a loop
without a tail): then the offset is attained by a real access of the (valid) program, so
it is in bounds. Otherwise
islpy computes the box exactly (`exact` is False). `clamp[d]` says whether offset + extent
can pass the array's end: copy loops then run `0..min(extent, DIM - offset)`.

This module owns the regions (``Ref``, ``region_refs``, ``loop_refs``), the choice between
the two derivations (``compute_box``) and the copy nests over a box; the box type is
``footprint_box.py``, the affine derivation ``footprint_affine.py``, the islpy one
``footprint_isl.py``. Their public names are importable from here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import ir
from ..affine import add
from .footprint_affine import forms_box, interval
from .footprint_box import Box, BoxError, var_names
from .footprint_isl import isl_box
from .scope import CACHE
from .util import fresh

MAX_ELEMENTS = 1 << 20
# A bound on `in register` buffers, not a target's register file (the agents size register
# tiles from the target): 32 registers of 64 bytes hold 1024 two-byte elements.
MAX_REGISTER = 1024


NEEDS_ISL = "its footprint needs an exact (islpy) analysis"

__all__ = ["MAX_ELEMENTS", "MAX_REGISTER", "NEEDS_ISL", "BoxError", "Box", "Ref", "region_refs",
           "loop_refs", "region_loops", "interval", "compute_box", "var_names", "copy_iterators",
           "copy_nest"]


@dataclass(frozen=True)
class Ref:
    """One access to the array inside the region."""
    stmt: ir.Assign
    access: ir.Access
    loops: tuple        # loops of the region enclosing the statement, outermost first
    write: bool         # the access is the statement's target


def region_refs(stmts, array, loops=()) -> list:
    """Every access to `array` (to any array when None) in the statements, with the region
    loops around it, in textual order."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Loop):
            out += region_refs(s.body, array, loops + (s,))
        elif isinstance(s, ir.Assign):
            if array is None or s.target.array == array:
                out.append(Ref(s, s.target, loops, True))
            out += [Ref(s, a, loops, False) for a in ir.walk_expr(s.value)
                    if isinstance(a, ir.Access) and (array is None or a.array == array)]
    return out


def loop_refs(program, iterator: str, array: str, include_loop: bool) -> list:
    """region_refs of `array` for the body of loop `iterator` (or for the loop itself),
    from a table of every access built once per program."""
    def compute():
        table = {}
        for r in region_refs(program.body, None):
            table.setdefault(r.access.array, []).append(r)
        return table
    out = []
    for r in CACHE.get(program, "refs", compute).get(array, ()):
        names = [l.iterator for l in r.loops]
        if iterator in names:
            k = names.index(iterator) + (0 if include_loop else 1)
            out.append(Ref(r.stmt, r.access, r.loops[k:], r.write))
    return out


def region_loops(stmts) -> list:
    return [s for s in ir.walk_stmts(stmts) if isinstance(s, ir.Loop)]


# --------------------------------------------------------------------------- the box

def compute_box(program, outer_loops, refs, dims, use_isl: bool = True) -> Box:
    """The bounding box of the refs' accesses for one iteration of outer_loops; raises
    BoxError. With use_isl False, only the cheap affine-form derivation is tried."""
    box = forms_box(program, refs, dims) if refs else None
    if box is not None:
        return box
    if not use_isl:
        raise BoxError(NEEDS_ISL)
    return isl_box(program, outer_loops, refs, dims)


# --------------------------------------------------------------------------- rewriting

def copy_iterators(taken: set, refs, box: Box, region: set) -> list:
    """Fresh iterator names for a copy nest, one per kept dimension, named after the inner
    iterator of that dimension (`j1` -> `j2`), else `c`."""
    names = []
    for d in box.kept:
        base = "c"
        for r in refs:
            found = [v.name for v in ir.walk_expr(r.access.indices[d])
                     if isinstance(v, ir.Var) and v.name in region]
            if found:
                base = re.sub(r"\d+$", "", found[0]) or "c"
                break
        names.append(fresh(taken, base, 1))
    return names


def copy_nest(box: Box, iterators, make_assign):
    """The loop nest over the (clamped) box: make_assign(local_index, array_index)."""
    local_idx = tuple(ir.Var(n) for n in iterators)
    by_dim = dict(zip(box.kept, iterators))
    arr_idx = tuple(add(box.offsets[d], ir.Var(by_dim[d])) if d in by_dim else box.offsets[d]
                    for d in range(len(box.dims)))
    stmt = make_assign(local_idx, arr_idx)
    for d, name in reversed(list(zip(box.kept, iterators))):
        stmt = ir.Loop(name, ir.Const(0), box.bound(d), (), (stmt,))
    return stmt

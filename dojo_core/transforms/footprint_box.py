"""A footprint's bounding box (``Box``), the refusal ``BoxError``, and the one expression
helper both ways of deriving a box share (``var_names``).

``Box`` holds, per dimension of the array, the offset (an expression of the outer
iterators and sizes), the extent (a constant at the sizes, and an expression equal to it)
and whether offset + extent can pass the array's end (``clamp``); it answers what a local
buffer over it needs: the kept dimensions (extent > 1), the local dimensions, the local
index of an access and the (clamped) bound of a copy loop.

Guarantees: ``Box`` is immutable and computes nothing but these projections; no module
of the footprint family is imported here (``footprint_affine`` and ``footprint_isl``
build boxes, ``footprint`` chooses between them), so there is no import circle.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .. import ir
from ..affine import sub


class BoxError(Exception):
    """The footprint has no usable bounding box; the message says why (one sentence).
    Not a DojoError: an internal signal, turned into NotApplicable by the transforms."""


@dataclass(frozen=True)
class Box:
    dims: tuple            # the array's declared dimensions (expressions)
    offsets: tuple         # expression per dimension
    extents: tuple         # int per dimension (at the sizes)
    extent_exprs: tuple    # expression per dimension, equal to extents at the sizes
    clamp: tuple           # bool per dimension: offset + extent can pass the array's end
    exact: bool            # derived from the affine forms (no islpy)
    covering: tuple = ()   # indices of the refs whose accesses alone touch the whole box

    @property
    def kept(self) -> tuple:
        return tuple(d for d, e in enumerate(self.extents) if e > 1)

    @property
    def size(self) -> int:
        return prod(self.extents)

    def local_dims(self) -> tuple:
        return tuple(self.extent_exprs[d] for d in self.kept)

    def local_index(self, access: ir.Access) -> tuple:
        return tuple(sub(access.indices[d], self.offsets[d]) for d in self.kept)

    def bound(self, d):
        if self.clamp[d]:
            return ir.Call("min", (self.extent_exprs[d], sub(self.dims[d], self.offsets[d])))
        return self.extent_exprs[d]


var_names = ir.var_names          # the footprint modules take it from here

"""divide T D by F: split dimension D of a local or temp buffer T into two, an outer one of
ceil(n/F) and an inner one of F elements (n: the dimension's extent), every access
T[.., e, ..] becoming T[.., e // F, e % F, ..]. With ``layout`` it packs a buffer the way
a BLAS packs its panels: the rows of a register tile's A next to each other for each k.

    local At: f32[6 * (N // 6), 256]             local At: f32[N // 6, 6, 256]
    for i20 in 0..N // 6:                         for i20 in 0..N // 6:
      for k1 in 0..256:               ==>           for k1 in 0..256:
        for i21 in 0..6:                              for i21 in 0..6:
          ... At[6*i20 + i21, k1] ...                   ... At[i20, i21, k1] ...

Where an index is ``F*q + r`` with ``r`` between 0 and F - 1 over every iteration of the
loops around the access (interval arithmetic over their ranges), the new indices are
``q`` and ``r``; elsewhere they are the floor division and the remainder themselves.

Always legal where it applies: the buffer is private to the kernel, every index of it lies
in ``0..n - 1`` (the checker proves accesses in bounds), and on those values
``e -> (e // F, e % F)`` is one-to-one, so every element keeps its own place and every
access goes through the map. Like ``split``, the result is exact at the program's sizes
(a replay at other sizes applies the step anew): the outer extent is ``n // F`` where F
divides n there; where it does not, the buffer grows to ``ceil(n/F)*F`` elements along D
(the padding is never touched). Refused: arrays of the kernel's interface
(their layout is the caller's), a dimension that does not exist, a factor below 2 or not
below the dimension's extent, a buffer a ``prefetch`` names (its box would have to be
divided too), and a padded local beyond the elements a local may hold.

The candidates come from the program: the factors F >= 2 that multiply an iterator in an
index of dimension D of some access to T (a split loop's ``6*i20 + i21``).
"""
from __future__ import annotations

from math import prod

from .. import ir
from ..affine import from_linear, linear_or_none, simplify
from ..poly import const_value
from . import footprint as fp
from . import scope
from .base import Transformation
from .footprint_affine import interval, iterator_intervals
from .layout import local_and_temp_buffers, private_buffer
from .util import accesses_in


def _factors(index) -> set:
    """The coefficients >= 2 of the variables of an index's linear form."""
    form = linear_or_none(index) or {}
    return {abs(v) for k, v in form.items() if isinstance(k, ir.Var) and abs(v) >= 2}


def divided_index(index, factor: int, env: dict, sizes: dict) -> tuple:
    """(quotient, remainder) of ``index`` by ``factor`` as IR expressions, equal to
    ``index // factor`` and ``index % factor`` for every value of the iterators in ``env``'s
    intervals (the plain ``q``, ``r`` of ``F*q + r`` where r stays in ``0..F - 1``)."""
    form = linear_or_none(index)
    if form is not None:
        const = form.get(1, 0)
        whole = {k: v // factor for k, v in form.items() if k != 1 and v % factor == 0}
        rest = {k: v for k, v in form.items() if k != 1 and v % factor != 0}
        whole[1], rest[1] = const // factor, const % factor
        span = interval(from_linear(rest), env, sizes)
        if span is not None and 0 <= span[0] and span[1] < factor:
            return from_linear(whole), from_linear(rest)
    f = ir.Const(factor)
    return simplify(ir.BinOp("//", index, f)), simplify(ir.BinOp("%", index, f))


def divided_extent(extent, factor: int, sizes: dict):
    """ceil(extent / factor) at the program's sizes, as an IR expression: the extent's
    linear form divided term by term where ``factor`` divides each coefficient, ``extent //
    factor`` where it divides the extent's value, else ``(extent + factor - 1) // factor``."""
    form = linear_or_none(extent)
    if form is not None and all(v % factor == 0 for v in form.values()):
        return from_linear({k: v // factor for k, v in form.items()})
    n = const_value(extent, sizes)
    if n is not None and n % factor == 0:
        return simplify(ir.BinOp("//", extent, ir.Const(factor)))
    return simplify(ir.BinOp("//", ir.BinOp("+", extent, ir.Const(factor - 1)),
                             ir.Const(factor)))


class Divide(Transformation):
    name = "divide"
    grammar = "BUFFER DIM by FACTOR"
    integers = ("DIM", "FACTOR")

    def candidates(self, program):
        for name, decl in local_and_temp_buffers(program).items():
            for dim in range(len(decl.dims)):
                found = set()
                for access in accesses_in(program.body):
                    if access.array == name:
                        found |= _factors(access.indices[dim])
                for factor in sorted(found):
                    yield name, dim, factor

    def check(self, program, params):
        name, dim, factor = params
        decl = private_buffer(program, name, "are divided")
        if isinstance(decl, str):
            return decl
        if not 0 <= dim < len(decl.dims):
            return f"'{name}' has {len(decl.dims)} dimension(s): there is no dimension {dim}"
        if factor < 2:
            return f"the factor must be at least 2, got {factor}"
        sizes = program.size_values
        n = const_value(decl.dims[dim], sizes)
        if n is not None and n <= factor:
            return (f"dimension {dim} of '{name}' has {n} elements at these sizes, not more "
                    f"than the factor {factor}")
        if any(isinstance(s, ir.Prefetch) and s.array == name
               for s in ir.walk_stmts(program.body)):
            return f"'{name}' is prefetched; divide it before the prefetch is added"
        if isinstance(decl, ir.Local):
            dims = [const_value(d, sizes) for d in decl.dims]
            if None not in dims:
                dims[dim] = -(-dims[dim] // factor) * factor
                if prod(dims) > fp.MAX_ELEMENTS:
                    return (f"'{name}' padded to a multiple of {factor} would hold "
                            f"{prod(dims)} elements, more than a local may ({fp.MAX_ELEMENTS})")
        return None

    def apply(self, program, params):
        name, dim, factor = params
        env, sizes = iterator_intervals(program), program.size_values

        def dims(old):
            return (*old[:dim], divided_extent(old[dim], factor, sizes), ir.Const(factor),
                    *old[dim + 1:])

        def access(a):
            q, r = divided_index(a.indices[dim], factor, env, sizes)
            return ir.Access(a.array, (*a.indices[:dim], q, r, *a.indices[dim + 1:]), a.loc)

        return scope.reshape_buffer(program, name, dims, access)


DIVIDE = Divide()

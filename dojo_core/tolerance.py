"""How far a floating-point output may honestly differ from a reference computed in another
association: the relative tolerance of one comparison, from the program.

A legal schedule may associate a reduction differently (rfactor's partial sums, vector
lanes, threads), and two associations of a sum or product of n terms differ by up to about
(n - 1) u (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 4.2;
u is the unit roundoff of the accumulating dtype), relative to the sum of the terms'
magnitudes, which is the result's magnitude when the terms do not cancel. A value computed
from reduced values inherits their error, so the bound adds along the data flow.

``error_units(program)`` is {array or local: E}: an element of it may carry E units of
roundoff from reassociation, E = (n - 1) + the most its operands carry, where n is the most
terms one element accumulates (the product of the extents of the loops around an
associative reduction statement, ``+=`` or ``*=``, that lie in the target's scope and do not
index it; ``max=`` and ``min=`` are exact in any order). Each program's result is within
E u of the exact one, so the results of two programs (a schedule and the untransformed
kernel) are within the sum of their bounds: ``relative_tolerance(programs, name, rtol,
dtype)`` is max(rtol, u times that sum) for f32 and f64 outputs (the dtypes the C code
accumulates in) and ``rtol`` for the others. For kernels of short reductions (fewer than
about 1700 f32 terms in all) nothing changes. The bound is rigorous, hence loose for very long
sums: a sequential f32 sum of 2^24 terms is only guaranteed to within about 100 %. It applies
to a schedule checked against the untransformed kernel (is the transformation right?), not to
a library's quality gate against numpy's float64 reference, where the dtype's tolerance holds
as it is (sum_squares.steps' partial sums pass it; the plain running sum does not).
"""
from __future__ import annotations

from functools import lru_cache
from itertools import product

from . import ir
from .interp.evaluate import eval_int

UNIT_ROUNDOFF = {"f32": 2.0 ** -24, "f64": 2.0 ** -53}
ASSOCIATIVE_OPS = ("+=", "*=")
MAX_CORNERS = 6          # bounds depending on more enclosing iterators are taken as unknown


def _read(expr) -> set:
    """The arrays and locals an expression reads (in its indices too)."""
    return {e.array for e in ir.walk_expr(expr) if isinstance(e, ir.Access)}


def _names(expr) -> set:
    """Every name an expression uses: iterators, sizes, arrays and locals."""
    return ir.var_names(expr) | _read(expr)


def _extent(loop, sizes: dict, ranges: dict):
    """The most iterations ``loop`` makes, over the corners of the enclosing iterators its
    bounds use (affine bounds take their extremes there), or None when unknown."""
    used = sorted((_names(loop.lo) | _names(loop.hi)) & set(ranges))
    if len(used) > MAX_CORNERS:
        return None
    best = 0
    for corner in product(*(ranges[name] for name in used)):
        env = {**sizes, **dict(zip(used, corner))}
        try:
            best = max(best, eval_int(loop.hi, env) - eval_int(loop.lo, env))
        except ValueError:
            return None
    return best


@lru_cache(maxsize=64)
def error_units(program: ir.Program) -> dict:
    """{array or local name: the roundoff units its elements may carry} (module docstring)."""
    sizes = program.size_values
    units: dict = {}

    def walk(body, loops, ranges, scope_depth):
        for stmt in body:
            if isinstance(stmt, ir.Local):
                scope_depth[stmt.name] = len(loops)
            elif isinstance(stmt, ir.Loop):
                lo_hi = []
                for bound, shift in ((stmt.lo, 0), (stmt.hi, -1)):
                    try:
                        lo_hi.append(eval_int(bound, sizes) + shift)
                    except ValueError:
                        lo_hi = None
                        break
                inner = {**ranges, stmt.iterator: tuple(lo_hi)} if lo_hi else ranges
                walk(stmt.body, loops + [(stmt, ranges)], inner, dict(scope_depth))
            elif isinstance(stmt, ir.Assign):
                target = stmt.target.array
                inherited = max((units.get(name, 0) for name in _read(stmt.value)), default=0)
                terms = 1
                if stmt.op in ASSOCIATIVE_OPS:
                    indexing = set().union(*(_names(i) for i in stmt.target.indices))
                    for loop, outer in loops[scope_depth.get(target, 0):]:
                        if loop.iterator in indexing:
                            continue
                        extent = _extent(loop, sizes, outer)
                        terms *= extent if extent is not None else max(sizes.values(), default=1)
                units[target] = max(units.get(target, 0), terms - 1 + inherited)
    walk(program.body, [], {}, {})
    return units


def relative_tolerance(programs, name: str, rtol: float, dtype: str) -> float:
    """The relative tolerance of output ``name`` when results of ``programs`` are compared
    (each differs from the exact result by its own reassociation bound, so two programs'
    results differ by up to the sum of theirs; a float64 reference such as numpy's counts as
    exact): ``rtol`` widened to that sum for f32 and f64, ``rtol`` for other dtypes."""
    u = UNIT_ROUNDOFF.get(dtype)
    if u is None:
        return rtol
    return max(rtol, sum(error_units(p).get(name, 0) for p in programs) * u)


__all__ = ["UNIT_ROUNDOFF", "error_units", "relative_tolerance"]

"""The exact bounding box of a footprint, computed with islpy (the fallback of
``footprint.compute_box`` when the affine forms do not suffice).

Owns ``isl_box(program, outer_loops, refs, dims) -> Box``: offsets are the indices with the
region's iterators at their lower bounds, else the smallest index overall, each checked to
be a minimum over every iteration; extents are maxima over every iteration.

Guarantees: the box returned covers every access of the refs and its offsets lie inside the
array for every outer iteration; ``exact`` is False. ``BoxError`` (one sentence) when no
such box exists: non-affine offsets, unbounded extents, mutually dependent lower bounds, or
an offset outside the array.
"""
from __future__ import annotations

import islpy as isl

from .. import ir
from ..affine import simplify
from ..poly import Model, NotAffine, Statement, affine_text, const_value
from .footprint_box import Box, BoxError, var_names


def isl_box(program, outer_loops, refs, dims) -> Box:
    """The box computed exactly with islpy (offsets: indices with inner iterators at their
    lower bounds, else the smallest index overall; checked to be minima; extents: maxima
    over every iteration)."""
    model = Model(program)
    sizes = model.sizes
    region = {l.iterator: l for r in refs for l in r.loops}
    stmts, domains = {}, {}
    for r in refs:
        st = model.statement_of(r.stmt)
        if st.name not in domains:
            domains[st.name] = isl.Set(f"{{ [{st.vars_text()}] : {model.domain_text(st)} }}")
        stmts[id(r)] = st
    live = [r for r in refs if not domains[stmts[id(r)].name].is_empty()]
    outer = Statement("O", None, tuple(outer_loops), ())
    outer_dom = isl.Set(f"{{ [{outer.vars_text()}] : {model.domain_text(outer)} }}")

    def lowered(expr):
        for _ in range(len(region) + 1):
            if not (var_names(expr) & set(region)):
                return simplify(expr)
            expr = ir.substitute(expr, {n: l.lo for n, l in region.items()})
        raise BoxError("its lower bounds depend on each other")

    def value(dom, st_iters, expr, which):
        try:
            text = affine_text(expr, sizes, st_iters)
        except NotAffine:
            raise BoxError("its offsets are not affine") from None
        vars_text = ", ".join(f"v_{i}" for i in st_iters)
        aff = isl.Aff(f"{{ [{vars_text}] -> [{text}] }}")
        v = dom.min_val(aff) if which == "min" else dom.max_val(aff)
        if v.is_infty() or v.is_neginfty() or v.is_nan():
            raise BoxError("its extent is unbounded")
        return v.to_python()

    outer_iters = tuple(l.iterator for l in outer_loops)
    offsets, extents, clamp = [], [], []
    for d, dim in enumerate(dims):
        cands = list(dict.fromkeys(lowered(r.access.indices[d]) for r in live)) or [ir.Const(0)]
        if live:      # last resort: a fixed offset, the smallest index over everything
            cands.append(ir.Const(min(value(domains[stmts[id(r)].name], stmts[id(r)].iterators,
                                            r.access.indices[d], "min") for r in live)))
        chosen = None
        for cand in cands:
            lo = hi = None
            for r in live:
                st = stmts[id(r)]
                diff = ir.BinOp("-", r.access.indices[d], cand)
                a = value(domains[st.name], st.iterators, diff, "min")
                b = value(domains[st.name], st.iterators, diff, "max")
                lo = a if lo is None else min(lo, a)
                hi = b if hi is None else max(hi, b)
            if lo is None or lo >= 0:
                chosen = (cand, 0 if hi is None else hi)
                break
        if chosen is None:
            raise BoxError("no offset expression is the smallest index of its footprint")
        off, top = chosen
        extent = top + 1
        dim_value = const_value(dim, sizes)
        if outer_dom.is_empty():
            off_lo, off_hi = 0, 0
        else:
            off_lo = value(outer_dom, outer_iters, off, "min")
            off_hi = value(outer_dom, outer_iters, off, "max")
        if off_lo < 0 or off_hi > dim_value - 1:
            raise BoxError("its offset falls outside the array in iterations where the "
                           "footprint is empty")
        offsets.append(off)
        extents.append(extent)
        clamp.append(extent > 1 and off_hi + extent > dim_value)
    exprs = tuple(dim if const_value(dim, sizes) == e else ir.Const(e)
                  for dim, e in zip(dims, extents))
    return Box(tuple(dims), tuple(offsets), tuple(extents), exprs, tuple(clamp), False)

"""The cheap bounding box of a footprint, from the affine forms of its indices (no islpy).

Owns ``interval`` (inclusive integer bounds of an index expression given intervals of the
iterators), ``iterator_intervals`` (those of every iterator), the per-program loop facts (computed once per program through
``scope.CACHE``) and ``forms_box(program, refs, dims) -> Box | None``.

Guarantees: ``forms_box`` returns a box only when every loop of the region has a lower
bound free of region iterators, a constant (maximal) extent, is never empty, and every
index is linear in the region's iterators (a negative coefficient needs a loop without a
tail); the offsets are then attained by a real access of the (valid) program, so they are
in bounds, and the box is ``exact``. Otherwise it returns None (the caller may ask islpy,
``footprint_isl``). ``Box.covering`` lists the refs whose accesses alone touch every
element of the box.
"""
from __future__ import annotations

from .. import ir
from ..affine import _NotLinear, from_linear, linear, simplify, sub
from ..poly import const_value
from .footprint_box import Box, var_names
from .scope import CACHE


def interval(expr, env: dict, sizes: dict):
    """(lo, hi), inclusive bounds of an integer expression given intervals of iterators,
    or None when unknown."""
    v = const_value(expr, sizes)
    if v is not None:
        return v, v
    if isinstance(expr, ir.Var):
        return env.get(expr.name)
    if isinstance(expr, ir.Neg):
        a = interval(expr.operand, env, sizes)
        return None if a is None else (-a[1], -a[0])
    if isinstance(expr, ir.BinOp):
        a = interval(expr.lhs, env, sizes)
        if expr.op in ("//", "%"):
            d = const_value(expr.rhs, sizes)
            if a is None or d is None or d <= 0:
                return None
            return (a[0] // d, a[1] // d) if expr.op == "//" else (0, d - 1)
        b = interval(expr.rhs, env, sizes)
        if a is None or b is None:
            return None
        if expr.op == "+":
            return a[0] + b[0], a[1] + b[1]
        if expr.op == "-":
            return a[0] - b[1], a[1] - b[0]
        if expr.op == "*":
            corners = [x * y for x in a for y in b]
            return min(corners), max(corners)
        return None
    if isinstance(expr, ir.Call) and expr.func in ("min", "max"):
        parts = [interval(x, env, sizes) for x in expr.args]
        if None in parts:
            return None
        f = min if expr.func == "min" else max
        return f(p[0] for p in parts), f(p[1] for p in parts)
    return None


def extent_bound(program, loop):
    """A constant bound on ``loop``'s trip count over every iteration of the loops around
    it (interval arithmetic over their ranges: ``for j in i..N`` inside ``for i in 0..N``
    gives N), or None when there is none. Never below the largest trip count."""
    env = _loop_facts(program)[0]
    iv = interval(simplify(sub(loop.hi, loop.lo)), env, program.size_values)
    return None if iv is None else max(iv[1], 0)


def iterator_intervals(program) -> dict:
    """iterator -> (lo, hi), inclusive bounds of its values over the whole program (interval
    arithmetic over the loops around it, at the program's sizes); an iterator whose bounds
    are unknown is missing."""
    return _loop_facts(program)[0]


def _loop_facts(program) -> tuple:
    """(intervals of every iterator, facts per loop) for the affine-form derivation, computed
    once per program. Facts: (lo form, iterators in lo, max extent n, extent expression,
    tail extents, iterators in the tails), or None for a loop that may be empty or whose
    extent has no constant bound."""
    def compute():
        sizes = program.size_values
        env, facts = {}, {}

        def go(body):
            for s in body:
                if isinstance(s, ir.Loop):
                    lo, hi = interval(s.lo, env, sizes), interval(s.hi, env, sizes)
                    if lo is not None and hi is not None:
                        env[s.iterator] = (lo[0], hi[1] - 1)
                    facts[s.iterator] = _facts(s, env, sizes)
                    go(s.body)
        go(program.body)
        return env, facts
    return CACHE.get(program, "loop-facts", compute)


def _facts(loop, env, sizes):
    try:
        lo_form = linear(loop.lo)
    except _NotLinear:
        return None
    ext = sub(loop.hi, loop.lo)
    n = const_value(ext, sizes)
    if n is not None:
        return (lo_form, var_names(loop.lo), n, ext, (), frozenset()) if n >= 1 else None
    if not (isinstance(loop.hi, ir.Call) and loop.hi.func == "min"):
        return None
    consts, tails = [], []
    for arg in loop.hi.args:
        e = sub(arg, loop.lo)
        c = const_value(e, sizes)
        if c is not None:
            consts.append(c)
        else:
            tails.append(e)
    if not consts or min(consts) < 1:
        return None
    for e in tails:                      # the loop is never empty
        iv = interval(e, env, sizes)
        if iv is None or iv[0] < 1:
            return None
    tail_vars = frozenset().union(*(var_names(e) for e in tails))
    return lo_form, var_names(loop.lo), min(consts), ir.Const(min(consts)), tuple(tails), tail_vars


def forms_box(program, refs, dims):
    sizes = program.size_values
    env, facts = _loop_facts(program)
    region = {l.iterator for r in refs for l in r.loops}
    info = {}
    for name in region:
        f = facts.get(name)
        if f is None or f[1] & region or f[5] & region:
            return None
        info[name] = f
    # per ref, per dimension: (offset form, span value, span form, inner terms)
    rows = {}
    try:
        for r in refs:
            if r.access.indices in rows:
                continue
            row = []
            for idx in r.access.indices:
                off, span, span_f, inner = {}, 0, {}, {}
                for term, c in linear(idx).items():
                    if isinstance(term, ir.Var) and term.name in region:
                        lo, _, n, ext, tails, _ = info[term.name]
                        if c < 0 and tails:
                            return None
                        # the minimum is at the first iteration, or at the last when c < 0
                        off = _add(off, lo if c > 0 else _add(_add(lo, linear(ext)), {1: -1}), c)
                        span += abs(c) * (n - 1)
                        span_f = _add(span_f, _add(linear(ext), {1: -1}), abs(c))
                        inner[term.name] = c
                    elif term != 1 and var_names(term) & region:
                        return None
                    else:
                        off = _add(off, {term: c})
                row.append((off, span, span_f, inner))
            rows[r.access.indices] = row
    except _NotLinear:
        return None
    per_ref = [rows[r.access.indices] for r in refs]
    uniq = list(rows.values())
    offsets, extents, exprs, clamp, diffs_all = [], [], [], [], []
    for d, dim in enumerate(dims):
        ref_off = uniq[0][d][0]
        diffs = []
        for row in uniq:
            diff = _add(row[d][0], ref_off, -1)
            if any(v for k, v in diff.items() if k != 1):
                return None
            diffs.append(diff.get(1, 0))
        m = min(diffs)
        top = [dv + row[d][1] for dv, row in zip(diffs, uniq)]
        best = top.index(max(top))
        extent = max(top) - m + 1
        dim_value = const_value(dim, sizes)
        if dim_value == extent:
            e_expr = dim                  # the whole dimension: say so
        else:
            e_expr = from_linear(_add(uniq[best][d][2], {1: diffs[best] - m + 1}))
            if const_value(e_expr, sizes) != extent:
                e_expr = ir.Const(extent)
        off = from_linear(_add(ref_off, {1: m}))
        iv = interval(off, env, sizes) if extent > 1 else None
        offsets.append(off)
        extents.append(extent)
        exprs.append(e_expr)
        clamp.append(extent > 1 and (iv is None or iv[1] + extent > dim_value))
        diffs_all.append({id(row): dv - m for dv, row in zip(diffs, uniq)})
    box = Box(tuple(dims), tuple(offsets), tuple(extents), tuple(exprs), tuple(clamp), True)
    covering = tuple(k for k, row in enumerate(per_ref)
                     if _covers(box, row, [dd[id(row)] for dd in diffs_all], info, sizes, env))
    return Box(box.dims, box.offsets, box.extents, box.extent_exprs, box.clamp, True, covering)


def _add(a: dict, b: dict, scale: int = 1) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + scale * v
    return out


def _covers(box, row, diffs, info, sizes, env) -> bool:
    """Does this one access touch every element of the box (for every outer iteration)?"""
    used = set()
    for d in box.kept:
        off, span, _, inner = row[d]
        if diffs[d] != 0:
            return False
        main = sorted((x for x in inner if info[x][2] > 1), key=lambda x: inner[x])
        if not main or used & set(main):
            return False
        used.update(main)
        if len(main) > 1:     # a split pair 16*j0 + j1: mixed radix, constant extents
            radix = 1
            for x in main:
                if inner[x] != radix or info[x][4]:
                    return False
                radix *= info[x][2]
            if radix != box.extents[d]:
                return False
            continue
        x = main[0]
        if abs(inner[x]) != 1:
            return False
        n, tails = info[x][2], info[x][4]
        if n != box.extents[d]:
            return False
        for tail in tails:    # the tail loop runs at least as far as the clamped box
            if box.clamp[d]:
                slack = const_value(sub(tail, sub(box.dims[d], box.offsets[d])), sizes)
                if slack is None or slack < 0:
                    return False
            else:
                iv = interval(tail, env, sizes)
                if iv is None or iv[0] < n:
                    return False
    return True

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
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

import islpy as isl

from .. import ir
from ..affine import _NotLinear, add, from_linear, linear, simplify, sub
from ..poly import Model, NotAffine, Statement, affine_text, const_value
from .scope import CACHE
from .util import fresh

MAX_ELEMENTS = 1 << 20
# A bound on `in register` buffers, not a target's register file (the agents size register
# tiles from the target): 32 registers of 64 bytes hold 1024 two-byte elements.
MAX_REGISTER = 1024


NEEDS_ISL = "its footprint needs an exact (islpy) analysis"
class BoxError(Exception):
    """The footprint has no usable bounding box; the message says why (one sentence)."""


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


# --------------------------------------------------------------------------- intervals

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


# --------------------------------------------------------------------------- the box

def compute_box(program, outer_loops, refs, dims, use_isl: bool = True) -> Box:
    """The bounding box of the refs' accesses for one iteration of outer_loops; raises
    BoxError. With use_isl False, only the cheap affine-form derivation is tried."""
    box = _forms_box(program, refs, dims) if refs else None
    if box is not None:
        return box
    if not use_isl:
        raise BoxError(NEEDS_ISL)
    return _isl_box(program, outer_loops, refs, dims)


def _vars(expr) -> set:
    return {n.name for n in ir.walk_expr(expr) if isinstance(n, ir.Var)}


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
        return (lo_form, _vars(loop.lo), n, ext, (), frozenset()) if n >= 1 else None
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
    tail_vars = frozenset().union(*(_vars(e) for e in tails))
    return lo_form, _vars(loop.lo), min(consts), ir.Const(min(consts)), tuple(tails), tail_vars


def _forms_box(program, refs, dims):
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
                    elif term != 1 and _vars(term) & region:
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


def _isl_box(program, outer_loops, refs, dims) -> Box:
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
            if not (_vars(expr) & set(region)):
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

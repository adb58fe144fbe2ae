"""partition L: cut a split's tail into a loop of its own, so the full tiles have constant
extents (which `unroll` and `vectorize` need) and only the last, partial tile keeps min().

    for i0 in 0..(N + 5) // 6:                 for i0 in 0..N // 6:
      for i1 in 0..min(6, N - 6*i0):   ==>       for i1 in 0..6:
        C[6*i0 + i1] = ...                         C[6*i0 + i1] = ...
                                               for i1t in 0..N % 6:
                                                 C[6*(N // 6) + i1t] = ...

L must be the outer loop of a split whose factor F does not divide the extent E: it runs
0..(E + F - 1) // F and some loop inside it runs 0..min(F, E - F*L). The first loop runs
0..E // F, where E - F*L >= F, so that min() is F there (proved: L <= E // F - 1 implies
F*L <= E - F). What follows is the partial tile, under fresh names (iterators and locals):
where E is constant at the program's sizes, L's body once with L = E // F and the tile's
extent E % F (a constant that vectorize and unroll accept); where E depends on outer
iterators, a copy of L running max(E // F, 0)..(E + F - 1) // F. Always legal: the same
instances run in the same order.
"""
from __future__ import annotations

from .. import ir
from ..affine import add, from_linear, linear_or_none, simplify
from ..poly import const_value
from .base import Transformation
from .util import (declared_names, extent, find_loop, map_exprs, renamed_copy, replace_at,
                   substitute_stmts)


def split_tail(loop):
    """(F, E, min_expr) for the first loop in loop's body whose upper bound is a split tail
    min(F, E - F*L) of this loop L with L running 0..(E + F - 1) // F; None if there is none.
    E is affine in sizes and outer iterators, with no min/max."""
    name = loop.iterator
    for inner in ir.loops(loop.body):
        hi = inner.hi
        if not (isinstance(hi, ir.Call) and hi.func == "min" and len(hi.args) == 2):
            continue
        f, rest = hi.args
        if not (isinstance(f, ir.Const) and isinstance(f.value, int) and f.value >= 2):
            continue
        form = linear_or_none(rest)
        if form is None:
            continue
        if form.get(ir.Var(name), 0) != -f.value:
            continue
        e_form = {k: v for k, v in form.items() if k != ir.Var(name)}
        if any(not isinstance(k, ir.Var) and k != 1 for k in e_form):
            continue
        e = simplify(from_linear(e_form))
        want_hi = simplify(ir.BinOp("//", add(e, ir.Const(f.value - 1)), ir.Const(f.value)))
        if loop.lo == ir.Const(0) and simplify(loop.hi) == want_hi:
            return f.value, e, hi
    return None


def _replace_expr(stmts, old, new):
    """The statements with every occurrence of the expression old replaced by new
    (loop bounds, indices, values and local dimensions)."""
    return map_exprs(stmts, lambda e: ir.map_expr(e, lambda n: new if n == old else n))


class Partition(Transformation):
    name = "partition"
    grammar = "LOOP"

    def candidates(self, program):
        for loop in ir.loops(program):
            if split_tail(loop) is not None:
                yield loop.iterator

    def check(self, program, params):
        loop, _ = find_loop(program, params)
        if loop is None:
            return f"there is no loop '{params}'"
        if any(a.startswith("gpu.") for a in loop.annotations):
            return f"loop '{params}' is bound to the GPU grid; partition before binding"
        tail = split_tail(loop)
        if tail is None:
            return (f"no loop inside '{params}' has a split tail min(F, E - F*{params}) "
                    f"with '{params}' running 0..(E + F - 1) // F")
        factor, e, _ = tail
        sizes = program.size_values
        n = extent(loop, sizes)
        full = const_value(ir.BinOp("//", e, ir.Const(factor)), sizes)
        if n is not None and full is not None and full >= n:
            return f"{factor} divides the extent of the split at these sizes: there is no tail"
        if full is not None and full <= 0:
            return f"loop '{params}' has no full tile of {factor} at these sizes"
        return None

    def apply(self, program, params):
        loop, path = find_loop(program, params)
        factor, e, tail_min = split_tail(loop)
        full = simplify(ir.BinOp("//", e, ir.Const(factor)))
        main = ir.Loop(loop.iterator, loop.lo, full, loop.annotations,
                       _replace_expr(loop.body, tail_min, ir.Const(factor)), loop.loc)
        if const_value(e, program.size_values) is not None:
            # one partial tile at these sizes: no loop around it, its extent E % F
            body = _replace_expr(loop.body, tail_min, ir.BinOp("%", e, ir.Const(factor)))
            body = substitute_stmts(body, {loop.iterator: full})
            rest = renamed_copy(body, declared_names(program))
            return replace_at(program, path, [main, *rest])
        rest, = renamed_copy((loop,), declared_names(program))
        rest = ir.Loop(rest.iterator, ir.Call("max", (full, ir.Const(0))), rest.hi,
                       rest.annotations, rest.body, rest.loc)
        return replace_at(program, path, [main, rest])


PARTITION = Partition()

"""split L by F: L -> L0 (outer, ceil(extent/F)) x L1 (inner, F); a min() tail when F does
not divide the extent at the program's sizes.

    for i in 0..N:                 for i0 in 0..(N + 31) // 32:
      C[i] = ...          ==>        for i1 in 0..min(32, N - 32*i0):
                                       C[32*i0 + i1] = ...
Always legal (the instances run in the same order). `parallel` stays on the outer loop,
`vector` and `unroll` go to the inner one; GPU-bound loops are not split.
"""
from __future__ import annotations

from .. import ir
from ..affine import add, mul, simplify, sub
from ..poly import const_value
from .base import Transformation
from .util import declared_names, extent, find_loop, max_extent, replace_at, substitute_stmts

MAX_FACTOR = 4096


def split_names(program, base: str):
    taken = declared_names(program)
    if base == "s":          # s0, s1 would read as statement references
        base = "s_"
    k = 0
    while f"{base}{k}" in taken or f"{base}{k + 1}" in taken:
        k += 2
    return f"{base}{k}", f"{base}{k + 1}"


def factor_menu(n: int) -> list:
    """Divisors of n and powers of two, both in [2, n)."""
    out = {d for d in range(2, min(n, MAX_FACTOR + 1)) if n % d == 0 and d <= 64 or
           (n % d == 0 and d in (n // 2, n // 4, n // 8))}
    p = 2
    while p < n and p <= MAX_FACTOR:
        out.add(p)
        p *= 2
    return sorted(d for d in out if d < n)


class Split(Transformation):
    name = "split"
    grammar = "LOOP by FACTOR"
    integers = ("FACTOR",)

    def candidates(self, program):
        sizes = program.size_values
        for loop in ir.loops(program):
            n = max_extent(loop, sizes)
            if n:
                for f in factor_menu(n):
                    yield loop.iterator, f

    def check(self, program, params):
        name, factor = params
        loop, _ = find_loop(program, name)
        if loop is None:
            return f"there is no loop '{name}'"
        if factor < 2:
            return f"the factor must be at least 2, got {factor}"
        if factor > MAX_FACTOR:
            return f"the factor must be at most {MAX_FACTOR}"
        if any(a.startswith("gpu.") for a in loop.annotations):
            return f"loop '{name}' is bound to the GPU grid; split before binding"
        n = extent(loop, program.size_values)
        if n is not None and factor >= n:
            return f"the factor {factor} is not smaller than the extent {n} of loop '{name}'"
        return None

    def apply(self, program, params):
        name, factor = params
        loop, path = find_loop(program, name)
        outer, inner = split_names(program, name)
        sizes = program.size_values
        ext = sub(loop.hi, loop.lo)
        n = const_value(ext, sizes)
        exact = n is not None and n % factor == 0
        if exact:
            outer_hi = simplify(ir.BinOp("//", ext, ir.Const(factor)))
            inner_hi = ir.Const(factor)
        else:
            outer_hi = simplify(ir.BinOp("//", add(ext, ir.Const(factor - 1)), ir.Const(factor)))
            inner_hi = ir.Call("min", (ir.Const(factor), sub(ext, mul(factor, ir.Var(outer)))))
        value = add(loop.lo, add(mul(factor, ir.Var(outer)), ir.Var(inner)))
        body = substitute_stmts(loop.body, {name: value})
        outer_ann = tuple(a for a in loop.annotations if a == "parallel")
        inner_ann = tuple(a for a in loop.annotations if a in ("vector", "unroll"))
        new = ir.Loop(outer, ir.Const(0), outer_hi, outer_ann,
                      (ir.Loop(inner, ir.Const(0), inner_hi, inner_ann, body),))
        return replace_at(program, path, [new])


SPLIT = Split()

"""wavefront I J by F: skew loop J by F times loop I and run the wavefronts ``w = J + F*I``
in order, the points of one wavefront (one per I) inside it.

    for i in 1..N - 1:                 for w0 in 3..3*N - 5:
      for j in 1..N - 1:        ==>      for i in max(1, (w0 - N + 3) // 2)..min(N - 1, (w0 - 1) // 2 + 1):
        A[i, j] = A[i, j - 1]              A[i, w0 - 2*i] = A[i, w0 - 2*i - 1]
                  + A[i - 1, j + 1]                         + A[i - 1, w0 - 2*i + 1]
        (wavefront i j by 2)

I and J are perfectly nested (J is the only statement of I's body), unannotated, and J's
bounds do not depend on I; J is replaced by ``w - F*I`` in the body. The instance (i, j)
runs at wavefront ``j + F*i`` and, inside it, in order of i; the order within one (i, j)
instance is unchanged.

Legal exactly when no dependence inside J runs, within one iteration of the loops around I,
from an instance to one of an earlier wavefront, or to one of the same wavefront and a
smaller I (checked against the exact dependences, islpy). An in-place sweep whose every
point reads its left and upper-right neighbours' new values (Gauss-Seidel: ``A[i, j - 1]``
and ``A[i - 1, j + 1]``) has a chain of dependences along J in every row; with F = 2 the
points of one wavefront are independent of each other, so the inner loop over I has work in
flight at once instead of one latency chain.
"""
from __future__ import annotations

from .. import ir
from ..affine import add, mul, simplify, sub
from ..deps import dependences, same
from .base import LoopPair, parse_int
from .util import declared_names, fresh, loops_around, replace_at, substitute_stmts

MAX_FACTOR = 8


class Wavefront(LoopPair):
    name = "wavefront"
    grammar = "OUTER INNER by FACTOR"
    integers = ("FACTOR",)
    done = "skewed"

    def parse(self, words: list):
        if len(words) != 4 or words[2] != "by":
            raise self.usage_error()
        return words[0], words[1], parse_int(words[3], "FACTOR", self)

    def candidates(self, program):
        for outer, inner in super().candidates(program):
            for factor in (1, 2):
                yield outer, inner, factor

    def check(self, program, params):
        outer_name, inner_name, factor = params
        if not 1 <= factor <= MAX_FACTOR:
            return f"the skew factor must be in 1..{MAX_FACTOR}, got {factor}"
        pair = self.rectangular_pair(program, outer_name, inner_name)
        if isinstance(pair, str):
            return pair
        outer, path, inner = pair
        deps = dependences(program)
        stmts = deps.inside(inner_name)
        around = [l.iterator for l in loops_around(program, path)]
        o, i, f = outer_name, inner_name, factor
        w_s, w_t = f"v_{i}_s + {f}*v_{o}_s", f"v_{i}_t + {f}*v_{o}_t"
        cond = (f"{same(around)} and ({w_t} < {w_s} or "
                f"({w_t} = {w_s} and v_{o}_t < v_{o}_s))")
        if deps.exists(stmts, stmts, lambda s, t: cond):
            return (f"a dependence would run to an earlier wavefront of '{inner_name}' + "
                    f"{factor}*'{outer_name}' (a point needs a value computed later); "
                    "a larger factor may")
        return None

    def apply(self, program, params):
        outer_name, inner_name, factor = params
        outer, path, inner = self.pair(program, outer_name, inner_name)
        wave = ir.Var(fresh(declared_names(program), "w", 0))
        i = ir.Var(outer.iterator)
        # w runs over j + F*i for i in [Ilo, Ihi), j in [Jlo, Jhi); i over the points of w
        w_lo = add(inner.lo, mul(factor, outer.lo))
        w_hi = add(inner.hi, mul(factor, sub(outer.hi, ir.Const(1))))
        first_i = _floordiv(add(sub(wave, inner.hi), ir.Const(factor)), factor)
        last_i = _floordiv(sub(wave, inner.lo), factor)
        body = substitute_stmts(inner.body, {inner.iterator: sub(wave, mul(factor, i))})
        points = ir.Loop(outer.iterator, _pick("max", outer.lo, first_i),
                         _pick("min", outer.hi, add(last_i, ir.Const(1))), (), body, outer.loc)
        wavefronts = ir.Loop(wave.name, simplify(w_lo), simplify(w_hi), (), (points,),
                             inner.loc)
        return replace_at(program, path, [wavefronts])


def _floordiv(expr, factor: int):
    expr = simplify(expr)
    return expr if factor == 1 else ir.BinOp("//", expr, ir.Const(factor))


def _pick(func: str, a, b):
    a, b = simplify(a), simplify(b)
    return a if a == b else ir.Call(func, (a, b))


WAVEFRONT = Wavefront()

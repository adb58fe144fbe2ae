"""expand T at L: give the local T, declared directly in the body of loop L, one slot per
iteration of L (scalar expansion). Its declaration moves to just before L with L's extent as
a new first dimension, and every access T[e] becomes T[L - lo, e].

    for i in 0..N:                       local s: f32[N]
      local s: f32                       for i in 0..N:
      s = 0                   ==>          s[i] = 0
      for j in 0..M:                       for j in 0..M:
        s += A[i, j]                         s[i] += A[i, j]
      B[i] = s                             B[i] = s[i]

Always legal where it applies: a local is fresh in every iteration of the loop that declares
it (the checker refuses a read before a write), so each iteration had its own copy and now
has its own slot, which no other iteration touches; every value flows as before. This is
what lets `fission` split L between the statement that writes T and one that reads it (the
row sums of attention, wanted after the product with V). Refused: an extent of L that is not
constant at the program's sizes, `in register` and `in shared` locals (a register tile or a
block's shared buffer does not grow by a loop's extent), an expanded buffer of more elements
than a local may hold (footprint.MAX_ELEMENTS), and loops bound to the GPU grid (the slot
array would have to live outside the generated kernel). An `in stack` local loses that
placement: the code generators place the expanded buffer by its size.
"""
from __future__ import annotations

from math import prod

from .. import ir
from ..affine import simplify, sub
from ..poly import const_value
from . import footprint as fp
from . import scope
from .base import Transformation
from .util import extent, find_loop, replace_at, with_body


class Expand(Transformation):
    name = "expand"
    usage = "expand LOCAL at LOOP"

    def parse(self, words):
        if len(words) != 3 or words[1] != "at":
            raise self.usage_error()
        return words[0], words[2]

    def format(self, params):
        return f"expand {params[0]} at {params[1]}"

    def candidates(self, program):
        for loop in ir.loops(program):
            for s in loop.body:
                if isinstance(s, ir.Local):
                    yield s.name, loop.iterator

    def check(self, program, params):
        name, where = params
        loop, _ = find_loop(program, where)
        if loop is None:
            return f"there is no loop '{where}'"
        decl = next((s for s in loop.body if isinstance(s, ir.Local) and s.name == name), None)
        if decl is None:
            return f"'{name}' is not a local declared directly in the body of loop '{where}'"
        if decl.space in ("register", "shared"):
            return f"'{name}' lives in {decl.space} storage, which cannot grow by a loop's extent"
        if any(a.startswith("gpu.") for a in loop.annotations):
            return f"loop '{where}' is bound to the GPU grid"
        count = extent(loop, program.size_values)
        if count is None:
            return f"loop '{where}' has no constant extent at these sizes"
        size = count * prod(const_value(d, program.size_values) for d in decl.dims)
        if size > fp.MAX_ELEMENTS:
            return (f"'{name}' expanded over '{where}' would have {size} elements, more than "
                    f"the {fp.MAX_ELEMENTS} a local buffer may hold")
        return None

    def apply(self, program, params):
        name, where = params
        loop, path = find_loop(program, where)
        decl = next(s for s in loop.body if isinstance(s, ir.Local) and s.name == name)
        count = simplify(sub(loop.hi, loop.lo))       # in the sizes' names where it can be
        if any(isinstance(n, ir.Var) and n.name not in program.size_values
               for n in ir.walk_expr(count)):
            count = ir.Const(extent(loop, program.size_values))
        slot = simplify(sub(ir.Var(where), loop.lo))
        body = scope.rewrite_accesses([s for s in loop.body if s is not decl], name,
                                      lambda a: ir.Access(a.array, (slot,) + a.indices, a.loc))
        expanded = ir.Local(decl.name, decl.dtype, (count,) + tuple(decl.dims), None, decl.loc)
        return replace_at(program, path, [expanded, with_body(loop, body)])


EXPAND = Expand()

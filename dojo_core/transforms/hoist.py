"""hoist S: move a loop-invariant assignment out of its loop, to just before the loop.

    for i in 0..N:                     for i in 0..N:
      local a: f32                       local a: f32
      for j in 0..M:          ==>        a = alpha[i] * 2
        a = alpha[i] * 2                 for j in 0..M:
        C[i, j] = a * B[i, j]              C[i, j] = a * B[i, j]

S is an `=` assignment directly in the body of a loop L whose iterator it does not use.
It then stores the same value at every iteration, and running it once before L is
equivalent iff (proved with islpy at the program's sizes, within one iteration of the
loops around L):
- S reads no element that a statement inside L (S included) writes;
- no other statement inside L writes an element S writes;
- no statement before S in L's body reads an element S writes (it would see the new
  value in L's first iteration);
- L runs at least once for every iteration of the loops around it;
- S uses no local declared inside L.
When S was the only statement of L (besides local declarations), L is removed.
Loops bound to the GPU grid are left alone (a statement between grid loops has no obvious
place in the generated kernel).
"""
from __future__ import annotations

import islpy as isl

from .. import ir
from ..deps import dependences, memo, same
from ..poly import NotAffine, Statement, affine_text
from .base import Transformation
from .fission import stmt_refs, uses_array
from .util import find_ref, loops_around, replace_at, uses_var

_EMPTY: dict = {}


def _is_empty(text: str) -> bool:
    """Emptiness of an ISL set given as text, memoised on the text (it says everything)."""
    return memo(_EMPTY, text, lambda t: isl.Set(t).is_empty())


def _vars(s, t) -> str:
    return ", ".join([f"v_{i}_s" for i in s.iterators] + [f"v_{i}_t" for i in t.iterators])


def _meet(model, s, acc_s, t, acc_t, around) -> bool:
    """Can instance s of acc_s and instance t of acc_t touch the same element, in the same
    iteration of the loops `around` (in any order)?"""
    if acc_s.array != acc_t.array:
        return False
    eqs = [f"{a} = {b}" for a, b in zip(model.index_texts(s, acc_s, "_s"),
                                       model.index_texts(t, acc_t, "_t"))]
    text = (f"{{ [{_vars(s, t)}] : {model.domain_text(s, '_s')} and "
            f"{model.domain_text(t, '_t')} and {' and '.join(eqs + [same(around)])} }}")
    return not _is_empty(text)


def runs_always(model, loop, around) -> bool:
    """Does `loop` run at least once for every iteration of the loops around it?"""
    outer = Statement("outer", None, tuple(around), ())
    iters = [l.iterator for l in around]
    lo = affine_text(loop.lo, model.sizes, iters, allow_minmax=True)
    hi = affine_text(loop.hi, model.sizes, iters, allow_minmax=True)
    names = ", ".join(f"v_{i}" for i in iters)
    return _is_empty(f"{{ [{names}] : {model.domain_text(outer)} and {hi} <= {lo} }}")


class Hoist(Transformation):
    name = "hoist"
    grammar = "STATEMENT"

    def candidates(self, program):
        refs = stmt_refs(program)
        for loop in ir.loops(program):
            for s in loop.body:
                if isinstance(s, ir.Assign) and s.op == "=" and refs[id(s)] and \
                        not uses_var([s], loop.iterator):
                    yield refs[id(s)]

    def check(self, program, ref):
        stmt, path = find_ref(program, ref)
        if stmt is None:
            return f"there is no statement '{ref}'"
        if isinstance(stmt, ir.Prefetch):
            return f"'{ref}' is a prefetch; only assignments are hoisted"
        if not isinstance(stmt, ir.Assign):
            return f"'{ref}' is a loop; only assignments are hoisted"
        if len(path) < 2:
            return f"'{ref}' is not inside a loop"
        around = loops_around(program, path)
        loop, outer = around[-1], around[:-1]
        name = loop.iterator
        if stmt.op != "=":
            return f"'{ref}' is a reduction ('{stmt.op}'); only '=' assignments are hoisted"
        if uses_var([stmt], name):
            return f"'{ref}' uses the iterator '{name}' of its loop"
        if any(a.startswith("gpu.") for a in loop.annotations):
            return f"loop '{name}' is bound to the GPU grid; hoist before binding"
        for s in ir.walk_stmts(loop.body):
            if isinstance(s, ir.Local) and uses_array([stmt], s.name):
                return f"'{ref}' uses the local '{s.name}' declared inside loop '{name}'"
        deps = dependences(program)
        model = deps.model
        around_names = [l.iterator for l in outer]
        try:
            me = next(s for s in deps.statements if s.positions == tuple(path))
            inner = [s for s in deps.statements if name in s.iterators]
            depth = len(path) - 1
            for t in inner:
                target = t.assign.target
                for acc in ir.reads(stmt):
                    if acc.array == target.array and _meet(model, me, acc, t, target, around_names):
                        return (f"'{ref}' reads '{acc.array}', which is written inside loop "
                                f"'{name}', so its value is not invariant")
            for t in inner:
                if t is me:
                    continue
                if _meet(model, me, stmt.target, t, t.assign.target, around_names):
                    return (f"another statement inside loop '{name}' writes the elements of "
                            f"'{stmt.target.array}' that '{ref}' writes")
                if t.positions[depth] < path[-1]:
                    for acc in ir.reads(t.assign):
                        if _meet(model, me, stmt.target, t, acc, around_names):
                            return (f"a statement before '{ref}' in loop '{name}' reads what "
                                    f"'{ref}' writes")
            if not runs_always(model, loop, outer):
                return (f"loop '{name}' may run zero times, and the hoisted statement would "
                        "then run where it did not")
        except NotAffine:
            return "the accesses or bounds are not affine, so hoisting cannot be proved legal"
        return None

    def apply(self, program, ref):
        stmt, path = find_ref(program, ref)
        loop_path = list(path[:-1])
        loop = loops_around(program, path)[-1]
        body = loop.body[:path[-1]] + loop.body[path[-1] + 1:]
        if not any(isinstance(s, (ir.Assign, ir.Loop)) for s in body):
            return replace_at(program, loop_path, [stmt])     # nothing left to repeat
        new = ir.Loop(loop.iterator, loop.lo, loop.hi, loop.annotations, body, loop.loc)
        return replace_at(program, loop_path, [stmt, new])


HOIST = Hoist()

"""stage A at L as NAME [in register|stack|shared]: copy the footprint of A accessed in one
iteration of L into a local buffer at the top of L's body (cache read, packing, im2col-like
staging) and access the buffer instead.

    for j0 in 0..M // 16:                      for j0 in 0..M // 16:
      for i in 0..N:                             local Bt: f32[K, 16]
        for k in 0..K:                  ==>      for k1 in 0..K:
          for j1 in 0..16:                         for j2 in 0..16:
            C[i, 16*j0 + j1] += ...                  Bt[k1, j2] = B[k1, 16*j0 + j2]
                  * B[k, 16*j0 + j1]             for i in 0..N:
                                                   for k in 0..K:
                                                     for j1 in 0..16:
                                                       C[i, 16*j0 + j1] += ... * Bt[k, j1]

The buffer is the footprint's bounding box (footprint.py): per dimension the offset is the
index with the iterators of the loops inside L at their lower bounds and the extent is
constant; dimensions of extent 1 are dropped (a row gives a 1-D buffer, one element a
scalar). Copy loops stop at the array's end (`0..min(32, N - 32*i0)`) when the box can pass
it. Legal when the box is constant and holds at most 2^20 elements (1024 `in register`),
`in shared` sits inside a gpu.block loop and outside gpu.thread loops, and every copied
element is initialised when L starts (always for in/inout arrays; else proved). The
result is re-checked with the checker.

When L writes A too (a cache write), the buffer is also stored back at the end of each
iteration, and A is read and written only through it inside L:

    for i in 0..N:                             for i in 0..N:
      for k in 0..M:                             local Yt: f32[M]
        Y[i, k] = exp(X[i, k] - m)               for k in 0..M:
      for l in 0..M:                  ==>          Yt[k] = exp(X[i, k] - m)
        Y[i, l] = Y[i, l] / s                    for l in 0..M:
                                                   Yt[l] = Yt[l] / s
                                                 for l1 in 0..M:
                                                   Y[i, l1] = Yt[l1]

so a row read back in the same iteration stays in a local buffer and A is written once,
by a loop that only stores (which the C generator may make streaming). Legal when one
assignment of L alone writes every element of the box (then the store back writes only
elements the iteration writes anyway, which keeps parallel loops around L race-free), and
the buffer is not `in shared`. The load at the top is left out when every element is first
written with `=` (exact dependences); otherwise it is kept where A is an in/inout array,
and for other arrays the checker decides, as for accumulate.
"""
from __future__ import annotations

from .. import ir
from . import footprint as fp
from . import scope
from .planned import PlannedTransformation, first_checked, first_written
from .util import declared_names, loops_around, replace_at, with_body


class Stage(PlannedTransformation):
    name = "stage"
    plan_key = "stage"
    spaces = ir.MEMORY_SPACES

    # ------------------------------------------------------------------ analysis

    def _compute_at(self, program, array, loop_name, use_isl, found, refs):
        loop, path, around, decl = found
        if not refs:
            return f"'{array}' is not accessed inside loop '{loop_name}'"
        if "vector" in loop.annotations:
            return (f"loop '{loop_name}' is vectorized and its body must stay free of "
                    "loops; stage before vectorizing")
        outer = around + [loop]
        try:
            box = fp.compute_box(program, outer, refs, decl.dims, use_isl)
        except fp.BoxError as exc:
            return (f"the footprint of '{array}' in one iteration of '{loop_name}' has "
                    f"no usable bounding box ({exc})")
        plan = dict(loop=loop, path=path, decl=decl, refs=refs, box=box, writes=False,
                    load=True)
        if any(r.write for r in refs):
            if not any(refs[k].write for k in box.covering):
                return (f"'{array}' is written inside loop '{loop_name}' but no one "
                        "assignment there writes every element of its footprint, so "
                        "storing the buffer back could write elements the loop does not")
            plan["writes"] = True
            if first_written(program, refs, box, array, [l.iterator for l in outer]):
                plan["load"] = False
            elif scope.kind_of(decl) not in ("in", "inout"):
                plan["load"] = None          # the checker decides
        return plan

    def _needs_proof(self, plan) -> bool:
        """Must the checker prove that the copied elements are initialised?"""
        if plan["writes"]:
            return plan["load"] is None
        return scope.kind_of(plan["decl"]) not in ("in", "inout") and not plan["box"].covering

    def _space_problem(self, program, plan, space):
        if space != "shared":
            return None
        if plan["writes"]:
            return ("a buffer that is stored back cannot be shared: every thread of the "
                    "block would store it")
        around = loops_around(program, plan["path"]) + [plan["loop"]]
        anns = [a for l in around for a in l.annotations]
        if not any(a.startswith("gpu.block") for a in anns):
            return "a shared buffer must be declared inside a gpu.block loop"
        if any(a.startswith("gpu.thread") for a in anns):
            return "a shared buffer must be declared outside gpu.thread loops"
        return None

    def _build_checked(self, program, params, plan):
        """The staged program, or a reason when the checker rejects it."""
        new, errors = first_checked(lambda load: _build(program, params, plan, load),
                                    plan["load"])
        if new is not None:
            return new
        if self._needs_proof(plan):
            return (f"some elements of '{params[0]}' copied at the start of "
                    f"'{params[1]}' are not initialised there")
        return f"staging produced an invalid program (a bug): {errors[0].message}"

    # ------------------------------------------------------------------ enumeration

    def _arrays(self, loop):
        """The arrays read and not written in the loop, in order of first read; then those
        it writes and reads back in a later part of its body (two or more statements or
        loops of the body touch them: passes over one row)."""
        written = {s.target.array for s in ir.assignments(loop.body)}
        seen = []
        for s in ir.assignments(loop.body):
            for a in ir.walk_expr(s.value):
                if isinstance(a, ir.Access) and a.array not in written and a.array not in seen:
                    seen.append(a.array)
        for array in dict.fromkeys(s.target.array for s in ir.assignments(loop.body)):
            parts = [fp.region_refs([part], array) for part in loop.body]
            if sum(1 for refs in parts if refs) >= 2 and any(
                    not r.write for refs in parts for r in refs):
                seen.append(array)
        return seen

    def _default_name(self, program, array):
        return scope.default_name(program, array + "t")


def _build(program, params, plan, load: bool):
    """The loop with the buffer declared, loaded (``load``), used in place of the array and,
    when the loop writes the array, stored back at the end of the body."""
    array, _, name, space = params
    loop, path, decl, refs, box = (plan[k] for k in ("loop", "path", "decl", "refs", "box"))
    taken = declared_names(program) | {name}
    region = {l.iterator for l in fp.region_loops(loop.body)}
    local = ir.Local(name, decl.dtype, box.local_dims(), space)
    head = [local]
    if load:
        iters = fp.copy_iterators(taken, refs, box, region)
        taken |= set(iters)
        head.append(fp.copy_nest(box, iters, lambda li, ai: ir.Assign(
            ir.Access(name, li), "=", ir.Access(array, ai))))
    body = scope.rewrite_accesses(loop.body, array,
                               lambda acc: ir.Access(name, box.local_index(acc), acc.loc))
    tail = []
    if plan["writes"]:
        iters = fp.copy_iterators(taken, refs, box, region)
        tail.append(fp.copy_nest(box, iters, lambda li, ai: ir.Assign(
            ir.Access(array, ai), "=", ir.Access(name, li))))
    return replace_at(program, path, [with_body(loop, tuple(head) + tuple(body) + tuple(tail))])


STAGE = Stage()

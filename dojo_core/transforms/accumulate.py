"""accumulate C at L as NAME [in register|stack]: the elements of C touched by loop L (all
its iterations, for one iteration of the loops around L) live in a local buffer while L
runs: loaded before L, every access of C inside L rewritten to the buffer, stored back
after L (register blocking, cache write).

    for i1 in 0..4:                               local acc: f32[4, 16] in register
      for k in 0..K:                              for i2 in 0..4:
        for j1 in 0..16:              ==>           for j2 in 0..16:
          C[4*i0 + i1, 16*j0 + j1] += ...             acc[i2, j2] = C[4*i0 + i2, 16*j0 + j2]
                                                  for i1 in 0..4:
                                                    for k in 0..K:
                                                      for j1 in 0..16:
                                                        acc[i1, j1] += ...
                                                  for i3 in 0..4:
                                                    for j3 in 0..16:
                                                      C[4*i0 + i3, 16*j0 + j3] = acc[i3, j3]

The buffer is the footprint's bounding box (footprint.py), with dimensions of extent 1
dropped (`accumulate C at k` in a matmul gives a scalar). The load is left out when every
element of the box is first written with `=` inside L (an `=` statement touches the whole
box and no other statement of L touches an element before it: exact dependences). Legal when
C is written inside L, the box is constant with at most 2^20 elements (1024 `in register`),
and the load reads only initialised elements: always for in/inout arrays; for others when
every access of C in L reads before it writes and one access touches the whole box (the
valid program then reads each element before L writes it); otherwise the checker decides
on the result. The result is re-checked with the checker.
"""
from __future__ import annotations

from .. import ir
from ..affine import simplify, sub
from . import footprint as fp
from . import scope
from .planned import PlannedTransformation, first_checked, first_written
from .util import body_at, declared_names, replace_at

SPACES = ("register", "stack")


class Accumulate(PlannedTransformation):
    name = "accumulate"
    plan_key = "accumulate"
    spaces = SPACES
    whole_loop = True

    # ------------------------------------------------------------------ analysis

    def _compute_at(self, program, array, loop_name, use_isl, found, refs):
        loop, path, around, decl = found
        if not any(r.write for r in refs):
            return f"'{array}' is not written inside loop '{loop_name}' (stage it instead)"
        if around and "vector" in around[-1].annotations:
            return (f"loop '{loop_name}' is the body of the vectorized loop "
                    f"'{around[-1].iterator}'; accumulate before vectorizing")
        try:
            box = fp.compute_box(program, around, refs, decl.dims, use_isl)
        except fp.BoxError as exc:
            return (f"the footprint of '{array}' in loop '{loop_name}' has no usable "
                    f"bounding box ({exc})")
        plan = dict(loop=loop, path=path, decl=decl, refs=refs, box=box, load=None,
                    start=_constant_start(program, path, array, box))
        if plan["start"] is not None:
            plan["load"] = False
        elif box.exact:
            if first_written(program, refs, box, array, [l.iterator for l in around]):
                plan["load"] = False
            elif scope.kind_of(decl) in ("in", "inout") or (
                    box.covering and all(r.stmt.op != "=" for r in refs if r.write)):
                plan["load"] = True
        return plan

    def _needs_proof(self, plan) -> bool:
        return plan["load"] is None

    def _build_checked(self, program, params, plan):
        """The transformed program, or a reason when the checker rejects it."""
        new, errors = first_checked(lambda load: _build(program, params, plan, load),
                                    plan["load"])
        if new is not None:
            return new
        if plan["load"] is None:
            return (f"{params[0]}'s elements in {params[1]} are not all initialised "
                    f"before {params[1]}")
        return f"accumulate produced an invalid program (a bug): {errors[0].message}"

    # ------------------------------------------------------------------ enumeration

    def _arrays(self, loop):
        return list(dict.fromkeys(s.target.array for s in ir.assignments(loop.body)))

    def _worth_it(self, box_size, whole, nested):
        return box_size < whole or nested or box_size == 1

    def _default_name(self, program, array):
        return scope.default_name(program, "acc")


def _constant_start(program, path, array: str, box):
    """The literal of the nest just before the loop at ``path`` when that nest stores it into
    exactly the box of ``array``: a perfect nest of loops ``0..box.bound(d)``, one per kept
    dimension d, around one statement ``array[offset + v] = literal`` that indexes kept
    dimension d by its own loop's iterator v and the others by their offsets (the store nest
    after the loop, up to the names); else None."""
    k = path[-1] - 1
    if k < 0:
        return None
    stmt, loops = body_at(program, path)[k], []
    while isinstance(stmt, ir.Loop) and len(stmt.body) == 1:
        loops.append(stmt)
        stmt = stmt.body[0]
    if not (loops and isinstance(stmt, ir.Assign) and stmt.op == "="
            and stmt.target.array == array and isinstance(stmt.value, ir.Const)
            and len(loops) == len(box.kept)):
        return None
    by_iterator = {l.iterator: l for l in loops}
    seen = []
    for d, index in enumerate(stmt.target.indices):
        rest = simplify(sub(index, box.offsets[d]))
        if d not in box.kept:
            if rest != ir.Const(0):
                return None
            continue
        loop = by_iterator.get(rest.name) if isinstance(rest, ir.Var) else None
        if loop is None or loop.iterator in seen or simplify(loop.lo) != ir.Const(0) \
                or simplify(loop.hi) != simplify(box.bound(d)):
            return None
        seen.append(loop.iterator)
    return stmt.value


def _build(program, params, plan, load: bool):
    array, _, name, space = params
    loop, path, decl, refs, box = (plan[k] for k in ("loop", "path", "decl", "refs", "box"))
    taken = declared_names(program) | {name}
    region = {l.iterator for l in fp.region_loops([loop])}
    local = ir.Local(name, decl.dtype, box.local_dims(), space)
    new = [local]
    start = plan["start"]
    if start is not None or load:      # the buffer starts at the literal, else at C
        iters = fp.copy_iterators(taken, refs, box, region)
        new.append(fp.copy_nest(box, iters, lambda li, ai: ir.Assign(
            ir.Access(name, li), "=", ir.Access(array, ai) if start is None else start)))
    new += scope.rewrite_accesses([loop], array,
                               lambda acc: ir.Access(name, box.local_index(acc), acc.loc))
    iters = fp.copy_iterators(taken, refs, box, region)
    new.append(fp.copy_nest(box, iters, lambda li, ai: ir.Assign(
        ir.Access(array, ai), "=", ir.Access(name, li))))
    program = replace_at(program, path, new)
    if start is not None:       # the literal's own nest, just before, is no longer needed
        program = replace_at(program, tuple(path[:-1]) + (path[-1] - 1,), [])
    return program


ACCUMULATE = Accumulate()

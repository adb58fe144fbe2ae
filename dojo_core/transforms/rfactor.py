"""rfactor L as P: split a reduction into one partial result per iteration of its innermost
loop L (TVM's rfactor), so that L's iterations are independent: L can then run as vector
lanes of a dot product while the loops around it are blocked or unrolled.

    for j in 0..M:                            for j in 0..M:
      for k0 in 0..K // 16:                     local P: f32[16]
        for k1 in 0..16:            ==>         for k1i in 0..16:
          C[j] += A[j, 16*k0 + k1] * x[..]        P[k1i] = 0
                                                for k0 in 0..K // 16:
                                                  for k1 in 0..16:
                                                    P[k1] += A[j, 16*k0 + k1] * x[..]
                                                for k1r in 0..16:
                                                  C[j] += P[k1r]

L's body must be one reduction ``T[idx] op= e`` (op one of += *= max= min=) whose target
does not vary with L and whose value reads no element of T that the reduction updates
within one run of R (exact dependences: cholesky's ``A[i, j] += -A[i, k] * A[j, k]``, k < j
< i, qualifies). The partial buffer replaces the
outermost loop R of the perfect nest of reduction loops around L (loops whose iterators
``idx`` does not use): it is set to op's identity (for an integer max= / min=, the type's
least / greatest value) before R, R reduces into ``P[L]``, and the partials are combined
into ``T[idx]`` after R. L's extent may be a split tail
``min(F, ...)``: P has F slots and the ones a short tile leaves alone keep the identity.
Legal whenever it applies, with the reassociation of op that vectorizing a reduction
already makes (floating-point sums may round differently, within the dtype's tolerance).
"""
from __future__ import annotations

from .. import ir
from ..affine import simplify, sub
from ..deps import dependences
from . import scope
from .base import Transformation
from .util import (body_at, declared_names, find_loop, fresh, loops_around, max_extent,
                   replace_at)

OPS = ("+=", "*=", "max=", "min=")
MAX_SLOTS = 4096


def _identity(op: str, dtype: str):
    """The value x with ``x op v == v`` for every v of dtype: 0, 1, -inf / +inf, and for an
    integer max= / min= the type's least / greatest value (exact, as integer max is)."""
    floating = dtype[0] in "fb"
    if op == "+=":
        return ir.Const(0.0 if floating else 0)
    if op == "*=":
        return ir.Const(1.0 if floating else 1)
    if floating:
        return ir.Const(float("-inf") if op == "max=" else float("inf"))
    bits = int(dtype[1:])
    return ir.Const(-(1 << (bits - 1)) if op == "max=" else (1 << (bits - 1)) - 1)


def _indexes(target, iterator: str) -> bool:
    return any(isinstance(n, ir.Var) and n.name == iterator
               for index in target.indices for n in ir.walk_expr(index))


def _reduction_root(program, loop_name: str, target) -> list:
    """The path of the outermost loop R of the perfect nest of reduction loops that ends in
    L (L itself when its parent indexes the target or holds other statements)."""
    _, path = find_loop(program, loop_name)
    around = loops_around(program, path)
    depth = len(path)
    while depth > 1:
        parent = around[depth - 2]
        if len(parent.body) != 1 or parent.annotations or _indexes(target, parent.iterator):
            break
        depth -= 1
    return path[:depth]


def _reads_own_updates(program, path, stmt) -> bool:
    """Does the reduction (the one statement of the loop at path) read an element of its
    target array that it updates within one run of its reduction root (exact)?"""
    deps = dependences(program)
    poly_stmt = next(s for s in deps.statements if s.positions == tuple(path) + (0,))
    root = _reduction_root(program, poly_stmt.loops[-1].iterator, stmt.target)
    fixed = [l.iterator for l in poly_stmt.loops[:len(root) - 1]]
    return deps.reads_own_writes(poly_stmt, fixed)


class RFactor(Transformation):
    name = "rfactor"
    grammar = "LOOP as NAME"

    def candidates(self, program):
        for loop in ir.loops(program):
            body = loop.body
            if len(body) == 1 and isinstance(body[0], ir.Assign) and body[0].op in OPS:
                yield loop.iterator, scope.default_name(program, f"{body[0].target.array}r")

    def check(self, program, params):
        loop_name, name = params
        loop, path = find_loop(program, loop_name)
        if loop is None:
            return f"there is no loop '{loop_name}'"
        if loop.annotations:
            return f"loop '{loop_name}' is annotated; rfactor before annotating"
        body = loop.body
        if not (len(body) == 1 and isinstance(body[0], ir.Assign) and body[0].op in OPS):
            return (f"loop '{loop_name}' must hold exactly one reduction statement "
                    f"(+=, *=, max= or min=)")
        stmt = body[0]
        if _indexes(stmt.target, loop_name):
            return f"the target of the reduction varies with '{loop_name}'"
        if any(isinstance(e, ir.Access) and e.array == stmt.target.array
               for e in ir.walk_expr(stmt.value)) and _reads_own_updates(program, path, stmt):
            return (f"the reduction's value reads elements of '{stmt.target.array}' that the "
                    "reduction updates")
        slots = max_extent(loop, program.size_values)
        if slots is None:
            return f"loop '{loop_name}' has no constant bound on its trip count"
        if slots > MAX_SLOTS:
            return f"loop '{loop_name}' has {slots} iterations; rfactor takes at most {MAX_SLOTS}"
        return scope.name_problem(program, name)

    def apply(self, program, params):
        loop_name, name = params
        loop, path = find_loop(program, loop_name)
        stmt = loop.body[0]
        decl = scope.visible_decl(program, path, stmt.target.array)
        dtype = decl.dtype
        slots = max_extent(loop, program.size_values)
        root_path = _reduction_root(program, loop_name, stmt.target)
        root = body_at(program, root_path)[root_path[-1]]
        taken = declared_names(program) | {name}
        init_it = f"{loop_name}i" if f"{loop_name}i" not in taken else fresh(taken, f"{loop_name}i")
        taken.add(init_it)
        sum_it = f"{loop_name}r" if f"{loop_name}r" not in taken else fresh(taken, f"{loop_name}r")
        slot = simplify(sub(ir.Var(loop_name), loop.lo))     # slots count from the loop's start
        partial = ir.Assign(ir.Access(name, (slot,)), stmt.op, stmt.value, stmt.loc)

        def rewrite(node):
            if node is loop:
                return ir.Loop(loop.iterator, loop.lo, loop.hi, loop.annotations, (partial,),
                               loop.loc)
            return ir.Loop(node.iterator, node.lo, node.hi, node.annotations,
                           (rewrite(node.body[0]),), node.loc)

        local = ir.Local(name, dtype, (ir.Const(slots),))
        init = ir.Loop(init_it, ir.Const(0), ir.Const(slots), (),
                       (ir.Assign(ir.Access(name, (ir.Var(init_it),)), "=",
                                  _identity(stmt.op, dtype)),))
        combine = ir.Loop(sum_it, ir.Const(0), ir.Const(slots), (),
                          (ir.Assign(stmt.target, stmt.op,
                                     ir.Access(name, (ir.Var(sum_it),))),))
        return replace_at(program, root_path, [local, init, rewrite(root), combine])


RFACTOR = RFactor()

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
row sums of attention, wanted after the product with V). A local of a loop whose extent varies
with the loops around it (``for j in i..N``) gets as many slots as the extent's constant bound
over their ranges (interval arithmetic), and iteration L uses slot ``L - lo``. Refused: a
temp's loop whose extent is not constant at the program's sizes, a local's loop without a
constant bound on its extent or starting at a min()/max() (the slot index would not be
affine), `in register` and `in shared` locals (a register tile or a
block's shared buffer does not grow by a loop's extent), an expanded buffer of more elements
than a local may hold (footprint.MAX_ELEMENTS), and loops bound to the GPU grid (the slot
array would have to live outside the generated kernel). An `in stack` local loses that
placement: the code generators place the expanded buffer by its size.
"""
from __future__ import annotations

from math import prod

from .. import ir
from ..affine import add, simplify, sub
from ..poly import const_value
from . import footprint as fp
from .footprint_affine import extent_bound
from . import scope
from .base import Transformation
from .fission import uses_array
from .util import extent, find_loop, replace_at, with_body


def _local_in(loop, name: str):
    """The declaration of local ``name`` directly in ``loop``'s body, or None."""
    return next((s for s in loop.body if isinstance(s, ir.Local) and s.name == name), None)


class Expand(Transformation):
    name = "expand"
    grammar = "LOCAL at LOOP"          # LOCAL: a local of LOOP's body, or a temp

    def candidates(self, program):
        temps = [d.name for d in program.arrays if d.kind == "temp"]
        for loop in ir.loops(program):
            for s in loop.body:
                if isinstance(s, ir.Local):
                    yield s.name, loop.iterator
            for name in temps:
                if uses_array(loop.body, name):
                    yield name, loop.iterator

    def check(self, program, params):
        name, where = params
        loop, _ = find_loop(program, where)
        if loop is None:
            return f"there is no loop '{where}'"
        if extent(loop, program.size_values) == 0:
            return f"loop '{where}' runs no iterations at these sizes: there is nothing to expand"
        decl = _local_in(loop, name)
        temp = program.array(name)
        if decl is None and temp is not None and temp.kind == "temp":
            return _temp_problem(program, temp, loop, where)
        if decl is None:
            return f"'{name}' is not a local declared directly in the body of loop '{where}'"
        if decl.space in ("register", "shared"):
            return f"'{name}' lives in {decl.space} storage, which cannot grow by a loop's extent"
        count = _loop_extent(program, loop, where, bounded=True)
        if isinstance(count, str):
            return count
        if any(isinstance(e, ir.Call) for e in ir.walk_expr(loop.lo)):
            return (f"loop '{where}' starts at a min() or max(), so its slots "
                    f"'{where}' - start would not be an affine index")
        size = count * prod(const_value(d, program.size_values) for d in decl.dims)
        if size > fp.MAX_ELEMENTS:
            return (f"'{name}' expanded over '{where}' would have {size} elements, more than "
                    f"the {fp.MAX_ELEMENTS} a local buffer may hold")
        return None

    def apply(self, program, params):
        name, where = params
        loop, path = find_loop(program, where)
        decl = _local_in(loop, name)
        if decl is None:
            return _expand_temp(program, program.array(name), loop, path)
        count = simplify(sub(loop.hi, loop.lo))       # in the sizes' names where it can be
        if any(isinstance(n, ir.Var) and n.name not in program.size_values
               for n in ir.walk_expr(count)):
            count = ir.Const(_loop_extent(program, loop, where, bounded=True))
        slot = simplify(sub(ir.Var(where), loop.lo))
        body = scope.rewrite_accesses([s for s in loop.body if s is not decl], name,
                                      lambda a: ir.Access(a.array, (slot,) + a.indices, a.loc))
        expanded = ir.Local(decl.name, decl.dtype, (count,) + tuple(decl.dims), None, decl.loc)
        return replace_at(program, path, [expanded, with_body(loop, body)])


def _loop_extent(program, loop, where: str, bounded: bool = False):
    """The constant extent of ``loop`` (named ``where``), or the reason a buffer cannot grow
    by it: the loop is bound to the GPU grid, or its extent is not constant here. With
    ``bounded``, an extent that varies with outer loops gives its constant bound instead
    (``extent_bound``: slots ``L - lo`` of every iteration fit below it)."""
    if any(a.startswith("gpu.") for a in loop.annotations):
        return f"loop '{where}' is bound to the GPU grid"
    count = extent(loop, program.size_values)
    if count is None and bounded:
        count = extent_bound(program, loop) or None
    if count is None:
        return f"loop '{where}' has no constant extent at these sizes"
    return count


def _temp_problem(program, temp, loop, where: str):
    """Why the kernel-level temp cannot get one slot per iteration of loop, or None.

    Legal when every access to it lies inside the loop and, in each iteration, a perfect nest
    that only stores into it (``T[i, j] = e`` over loops running exactly 0..dims, e not
    reading T) comes before any other statement of the loop's body that touches it: every
    element then holds a value of the same iteration whenever it is read, and no value
    crosses iterations."""
    if _used_outside(program.body, loop, temp.name):
        return f"'{temp.name}' is used outside loop '{where}'"
    count = _loop_extent(program, loop, where)
    if isinstance(count, str):
        return count
    sizes = program.size_values
    first = next((s for s in loop.body if uses_array((s,), temp.name)), None)
    if first is None or not _stores_every_element(first, temp, sizes):
        return (f"the first statement of loop '{where}' that touches '{temp.name}' does not "
                f"store every element of it, so a value could cross iterations")
    count_expr = simplify(sub(loop.hi, loop.lo))
    if any(isinstance(n, ir.Var) and n.name not in sizes for n in ir.walk_expr(count_expr)):
        return f"the extent of loop '{where}' depends on other loops"
    size = count * prod(const_value(d, sizes) for d in temp.dims)
    if size > fp.MAX_ELEMENTS:
        return (f"'{temp.name}' expanded over '{where}' would have {size} elements, more than "
                f"the {fp.MAX_ELEMENTS} a buffer may hold")
    return None


def _used_outside(body, loop, name: str) -> bool:
    """Whether a statement of body that is not inside loop touches name."""
    for s in body:
        if s is loop:
            continue
        if isinstance(s, ir.Loop):
            if _used_outside(s.body, loop, name):
                return True
        elif uses_array((s,), name):
            return True
    return False


def _stores_every_element(stmt, temp, sizes) -> bool:
    """stmt is a perfect nest storing T[i1, .., in] = e (e not reading T), loop k running
    exactly 0..dims[k] at these sizes."""
    loops = []
    while isinstance(stmt, ir.Loop) and len(stmt.body) == 1:
        loops.append(stmt)
        stmt = stmt.body[0]
    if not (isinstance(stmt, ir.Assign) and stmt.op == "=" and stmt.target.array == temp.name):
        return False
    if any(isinstance(e, ir.Access) and e.array == temp.name for e in ir.walk_expr(stmt.value)):
        return False
    index = stmt.target.indices
    if len(index) != len(temp.dims) or len(loops) != len(index):
        return False
    by_name = {l.iterator: l for l in loops}
    for idx, dim in zip(index, temp.dims):
        if not isinstance(idx, ir.Var) or idx.name not in by_name:
            return False
        l = by_name.pop(idx.name)
        if const_value(l.lo, sizes) != 0 or const_value(l.hi, sizes) != const_value(dim, sizes):
            return False
    return True


def _expand_temp(program, temp, loop, path):
    count = simplify(sub(loop.hi, loop.lo))
    slot = simplify(sub(ir.Var(loop.iterator), loop.lo))
    this_slot = (slot, simplify(add(slot, ir.Const(1))))       # a prefetch's range
    body = scope.rewrite_accesses(loop.body, temp.name,
                                  lambda a: ir.Access(a.array, (slot,) + a.indices, a.loc),
                                  box=lambda ranges: (this_slot,) + ranges)
    new = replace_at(program, path, [with_body(loop, body)])
    arrays = tuple(ir.ArrayDecl(d.kind, d.name, d.dtype, (count,) + tuple(d.dims), d.loc)
                   if d.name == temp.name else d for d in new.arrays)
    return ir.Program(new.name, new.sizes, arrays, new.body, new.doc, new.loc)


EXPAND = Expand()

"""Loop annotations: parallelize, vectorize, unroll and bind (to the CUDA grid).

The annotation does not change what a program computes in the IR; these checks guarantee
that the code generators may run the iterations in parallel, as SIMD lanes, unrolled or as
GPU blocks and threads without changing the results:

- parallelize L: no dependence carried by L (within one iteration of the loops around it).
- vectorize L: L is innermost with a constant extent, any prefetch in it asks for one
  element per iteration (the vector code asks for each cache line once), and the only
  dependences it carries are those of reductions (`+=`, `*=`, `max=`, `min=`) into
  elements that no other statement of L touches and whose value reads no element of
  their own array that L updates (exact: trisolv's `x[i] += -L[i, j] * x[j]` with j < i
  qualifies; a `max=`/`min=` into an i8 element only with a plain i8 element as its
  value: updates wrap modulo 256).
- unroll L: a constant extent of at most 64, and at most 512 statements in the code once L
  and the unrolled loops around and inside it are copied out (compile time and code size
  grow with the copies, never the speed of a loop that is not a register tile).
- bind L gpu.block.x|y|z / gpu.thread.x|y|z: parallelizable; block loops enclose thread
  loops; each axis is bound once along a nest; thread loops have extents bounded by
  constants (a split tail `0..min(32, ...)` counts as 32, guarded in the generated code)
  whose product is at most 1024.
A loop carries at most one annotation.
"""
from __future__ import annotations

from .. import ir
from ..deps import dependences, same
from ..poly import apart_in_loop
from .base import Transformation
from .util import extent, find_loop, loops_around, max_extent, one_element_box, replace_at

MAX_UNROLL = 64
MAX_UNROLLED_STATEMENTS = 512
MAX_THREADS = 1024


def _annotate(program, name, annotation):
    loop, path = find_loop(program, name)
    new = ir.Loop(loop.iterator, loop.lo, loop.hi, loop.annotations + (annotation,), loop.body,
                  loop.loc)
    return replace_at(program, path, [new])


def _common(program, name):
    loop, path = find_loop(program, name)
    if loop is None:
        return None, None, f"there is no loop '{name}'"
    if loop.annotations:
        return loop, path, f"loop '{name}' is already annotated ({' '.join(loop.annotations)})"
    return loop, path, None


def carries_dependence(program, name, path, exempt=lambda stmts: ()) -> bool:
    """Does loop ``name`` (at ``path``) carry a dependence within one iteration of the loops
    around it?  A statement's dependences on itself are left out when its name is in
    ``exempt(stmts)`` (stmts: the poly statements inside the loop)."""
    deps = dependences(program)
    stmts = deps.inside(name)
    around = [l.iterator for l in loops_around(program, path)]
    cond = f"{same(around)} and v_{name}_s != v_{name}_t"
    skip = set(exempt(stmts))
    return deps.exists(stmts, stmts, lambda s, t: None if s.name == t.name and s.name in skip else cond)


class _OneLoop(Transformation):
    """``NAME LOOP``: adds ``annotation`` to a loop without one, when ``check_at`` allows."""

    grammar = "LOOP"
    annotation = ""

    def candidates(self, program):
        return [l.iterator for l in ir.loops(program) if not l.annotations]

    def apply(self, program, params):
        return _annotate(program, params, self.annotation)

    def check(self, program, name):
        loop, path, reason = _common(program, name)
        return reason or self.check_at(program, name, loop, path)

    def check_at(self, program, name, loop, path):
        """Why ``loop`` (an existing loop without annotations, at ``path``) may not take
        this annotation, or None."""
        raise NotImplementedError


class Parallelize(_OneLoop):
    name = "parallelize"
    annotation = "parallel"

    def check_at(self, program, name, loop, path):
        for outer in loops_around(program, path):
            if "parallel" in outer.annotations or any(a.startswith("gpu.") for a in outer.annotations):
                return f"loop '{name}' is already inside the parallel loop '{outer.iterator}'"
        if any("parallel" in l.annotations for l in ir.loops(loop.body)):
            return f"loop '{name}' contains a parallel loop"
        if carries_dependence(program, name, path):
            return f"loop '{name}' carries a dependence, so its iterations cannot run in parallel"
        return None


class Vectorize(_OneLoop):
    name = "vectorize"
    annotation = "vector"

    def check_at(self, program, name, loop, path):
        if any(isinstance(s, (ir.Loop, ir.Local)) for s in loop.body):
            return f"loop '{name}' is not innermost (its body must hold only assignments)"
        n = extent(loop, program.size_values)
        if n is None:
            return f"loop '{name}' has no constant extent"
        wide = [s.array for s in loop.body if isinstance(s, ir.Prefetch)
                and not one_element_box(s, program.size_values)]
        if wide:
            return (f"loop '{name}' prefetches more than one element of '{wide[0]}' per "
                    "iteration, which its vector code cannot ask for (one element per "
                    "iteration only); vectorize before prefetching")
        wrapped = _i8_names(program)
        deps = dependences(program)
        around = [l.iterator for l in loops_around(program, path)]

        def apart(x, target):
            return apart_in_loop(x, target, name, program.size_values)

        def reductions(stmts):   # the code generator lowers them with vector accumulators
            return {s.name for s in stmts if _is_lane_reduction(
                s, stmts, wrapped, lambda st: deps.reads_own_writes(st, around), apart)}
        if carries_dependence(program, name, path, exempt=reductions):
            return (f"loop '{name}' carries a dependence that is not a reduction, "
                    "so its iterations cannot run as SIMD lanes")
        return None


def _i8_names(program) -> set:
    """The i8 arrays and locals of a program (names are unique in a kernel)."""
    names = {d.name for d in program.arrays if d.dtype == "i8"}
    names |= {s.name for s in ir.walk_stmts(program.body)
              if isinstance(s, ir.Local) and s.dtype == "i8"}
    return names


def _is_lane_reduction(stmt, loop_stmts, wrapped=frozenset(), reads_own_writes=None,
                       apart=None) -> bool:
    """A reduction whose target element no other statement of the loop touches (another
    element of its array only where ``apart(access, target)`` proves it distinct) and whose value
    reads no element of the target array that the loop updates (``reads_own_writes(stmt)``,
    exact; without it, no element of the target array at all); statements are
    poly.Statement, compared by name.
    A max=/min= into an i8 element (``wrapped``: the i8 names) qualifies only with a plain
    i8 element as its value: every update wraps modulo 256, which commutes with max and min
    only for values already in the i8 range (+= and *= wrap alike in any order)."""
    assign = stmt.assign
    if assign.op not in ir.REDUCTION_OPS:
        return False
    target = assign.target.array
    if target in wrapped and assign.op in ("max=", "min=") and not (
            isinstance(assign.value, ir.Access) and assign.value.array in wrapped):
        return False
    if any(isinstance(a, ir.Access) and a.array == target for a in ir.walk_expr(assign.value)) \
            and (reads_own_writes is None or reads_own_writes(stmt)):
        return False
    for other in loop_stmts:
        if other.name == stmt.name:
            continue
        a = other.assign
        touched = [a.target] + [x for x in ir.walk_expr(a.value) if isinstance(x, ir.Access)]
        if any(x.array == target and not (apart and apart(x, assign.target)) for x in touched):
            return False
    return True


class Unroll(_OneLoop):
    name = "unroll"
    annotation = "unroll"

    def check_at(self, program, name, loop, path):
        n = extent(loop, program.size_values)
        if n is None:
            return f"loop '{name}' has no constant extent"
        if n > MAX_UNROLL:
            return f"loop '{name}' has {n} iterations; unroll takes at most {MAX_UNROLL}"
        around = [l for l in loops_around(program, path) if "unroll" in l.annotations]
        root = around[0] if around else loop
        copies = unrolled_statements([root], program.size_values, also=loop)
        if copies > MAX_UNROLLED_STATEMENTS:
            return (f"unrolling loop '{name}' would give {copies} statements once the unrolled "
                    f"loops are copied out; unroll takes at most {MAX_UNROLLED_STATEMENTS}")
        return None


def unrolled_statements(stmts, sizes, also=None) -> int:
    """The assignments in stmts once every loop annotated ``unroll`` (and ``also``, a loop
    about to be) is copied out: an unrolled loop counts its body extent times, any other loop
    its body once."""
    total = 0
    for s in stmts:
        if isinstance(s, ir.Loop):
            body = unrolled_statements(s.body, sizes, also)
            unrolled = "unroll" in s.annotations or s is also
            total += (extent(s, sizes) or 1) * body if unrolled else body
        elif isinstance(s, ir.Assign):
            total += 1
    return total


def _shared_outside(program, path) -> bool:
    """Is a shared local declared in a body that encloses the statement at path?"""
    body = program.body
    for k in path:
        if any(isinstance(s, ir.Local) and s.space == "shared" for s in body):
            return True
        body = body[k].body if isinstance(body[k], ir.Loop) else ()
    return False


class Bind(Transformation):
    name = "bind"
    grammar = "LOOP AXIS"
    usage = "bind LOOP gpu.block.x|y|z|gpu.thread.x|y|z"

    def parse(self, words):
        params = super().parse(words)
        if params[1] not in ir.GPU_ANNOTATIONS:
            raise self.usage_error()
        return params

    def candidates(self, program):
        for loop in ir.loops(program):
            if not loop.annotations:
                for axis in ir.GPU_ANNOTATIONS:
                    yield loop.iterator, axis

    def check(self, program, params):
        name, axis = params
        loop, path, reason = _common(program, name)
        if reason:
            return reason
        around = loops_around(program, path)
        inner = ir.loops(loop.body)
        kind = axis.split(".")[1]
        if any("parallel" in l.annotations for l in around + inner):
            return f"loop '{name}' is nested with a CPU-parallel loop"
        nest_axes = [a for l in around + inner for a in l.annotations if a.startswith("gpu.")]
        if axis in nest_axes:
            return f"{axis} is already bound in this loop nest"
        if kind == "block" and any(a.startswith("gpu.thread") for l in around for a in l.annotations):
            return "a block loop cannot sit inside a thread loop"
        if kind == "thread" and any(a.startswith("gpu.block") for l in inner for a in l.annotations):
            return "a thread loop cannot enclose a block loop"
        if kind == "thread" and any(isinstance(s, ir.Local) and s.space == "shared"
                                    for s in ir.walk_stmts(loop.body)):
            return (f"loop '{name}' declares a shared local, which must stay outside the "
                    "thread loops")
        if kind == "block" and _shared_outside(program, path):
            return (f"a shared local declared outside loop '{name}' would sit outside the "
                    "block loops")
        if kind == "thread":
            n = max_extent(loop, program.size_values)
            if n is None:
                return f"loop '{name}' has no constant bound on its extent (thread loops need one)"
            threads = n
            for l in around + inner:
                if any(a.startswith("gpu.thread") for a in l.annotations):
                    threads *= max_extent(l, program.size_values) or 1
            if threads > MAX_THREADS:
                return f"{threads} threads per block exceed the limit of {MAX_THREADS}"
        if carries_dependence(program, name, path):
            return f"loop '{name}' carries a dependence, so it cannot be bound to the GPU grid"
        return None

    def apply(self, program, params):
        return _annotate(program, params[0], params[1])


PARALLELIZE, VECTORIZE, UNROLL, BIND = Parallelize(), Vectorize(), Unroll(), Bind()

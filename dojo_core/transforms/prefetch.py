"""prefetch X at L: ask the caches for what the next iteration of L touches of array X, at
the top of each iteration (software prefetch).

    for i20 in 0..N // 6:                  for i20 in 0..N // 6:
      for i2 in 0..6:                        prefetch C[6*i20 + 6..6*i20 + 12, 16*j20..16*j20 + 16]
        for j3 in 0..16:          ==>        for i2 in 0..6:
          acc[i2, j3] = C[6*i20 + i2,          for j3 in 0..16:
                          16*j20 + j3]           acc[i2, j3] = C[6*i20 + i2, 16*j20 + j3]
      ...                                    ...

The box is the footprint's bounding box of X in one iteration of L (footprint.py: the
offsets with the iterators inside L at their lower bounds, constant extents) with L's
iterator replaced by iterator + 1, cut to what the current iteration's box does not hold
where that is a box (one dimension shifted by less than its extent: rows i..i + 2 now, i + 1..i + 3
next, asks for row i + 3). A prefetch computes nothing (the generated C prefetches
each cache line of the box, its indices clamped into the array: c_prefetch.py), so the step
is always legal. It is refused where it cannot help or would break something: L bound to
the GPU (or inside a bound loop), L vectorized (or inside a vector loop: its body must stay
assignments), a box without affine bounds, a box of more than MAX_PREFETCH_ROWS rows or
MAX_PREFETCH_ELEMENTS elements (each row is a loop of prefetch instructions in the
generated code: the limits bound its size), or L already prefetching X.

Candidates are kept few, since each multiplies the agents' branching: loops that hold a
loop (not innermost), and the arrays accessed in them whose next-iteration box is within
the limits, differs from the current one, and does NOT continue it in memory -- neither one
contiguous run followed by the next, nor every row continued by the same row. Those are the
streams the hardware prefetchers already follow; a box a fixed stride away (the next 6x16
tile of C, rows 4 KiB apart) is the case they miss.

``prefetch X at L ahead O`` (O a loop around L) spreads the next iteration of O over L: at
each iteration of L it asks for the box X has in the same iteration of L within the next
iteration of O (L's iterator unchanged, O's plus one). In a row loop whose inner loops
stream along a row, the next row then arrives a line at a time while the current one is
processed, instead of all at once at the top of the row:

    for i in 0..N:                         for i in 0..N:
      for k in 0..M:              ==>        for k in 0..M:
        Y[i, k] = exp(X[i, k] - m)             prefetch X[i + 1, k]
                                               Y[i, k] = exp(X[i, k] - m)

L may then be a vector loop (innermost, its box one element of X: the vector code asks
for each cache line once; ``c_vector.py``). Candidates of this form: innermost loops L
and O the outermost loop around them, for the arrays that L streams through (its own next
box continues the current one), whose box in O's next iteration lies in other rows (a
shift along the last dimension only stays on the stream L is already on), and whose
stream the hardware loses across O's iterations: O's next box does not continue its
current one, or several loops in O pass over the array (softmax's passes over a row).
"""
from __future__ import annotations

from math import prod

from .. import ir
from ..affine import add, simplify, sub, substitute_index
from ..poly import const_value
from . import footprint as fp
from . import scope
from .base import Transformation
from .util import replace_at, with_body

MAX_PREFETCH_ROWS = 64
MAX_PREFETCH_ELEMENTS = 1024


def next_box(program, loop, around, decl, use_isl: bool = True, ahead: str | None = None):
    """The box (((lo, hi), ...) per dimension, affine) of ``decl``'s array that the next
    iteration of ``loop`` touches (with ``ahead``, the name of a loop around it: the same
    iteration of ``loop`` in the next iteration of that loop), cut to the part the current
    iteration's box does not hold (``_new_part``), its extents, and the per-dimension
    shift of the whole next box from the current one (ints, None where not constant); or
    the reason there is none."""
    refs = fp.loop_refs(program, loop.iterator, decl.name, include_loop=False)
    if not refs:
        return f"'{decl.name}' is not accessed inside loop '{loop.iterator}'"
    try:
        box = fp.compute_box(program, around + [loop], refs, decl.dims, use_isl)
    except fp.BoxError as exc:
        return (f"the footprint of '{decl.name}' in the next iteration of '{loop.iterator}' "
                f"is not a box with affine bounds ({exc})")
    stepped = ahead or loop.iterator
    step = {stepped: add(ir.Var(stepped), ir.Const(1))}
    ranges, shifts = [], []
    for off, ext, n in zip(box.offsets, box.extent_exprs, box.extents):
        lo = simplify(substitute_index(off, step))
        ranges.append(_index_range(lo, n, ext))
        shifts.append(const_value(simplify(sub(lo, off)), program.size_values))
    ranges, extents = _new_part(ranges, list(box.extents), shifts)
    return tuple(ranges), tuple(extents), tuple(shifts)


def _index_range(lo, n: int, ext=None):
    """lo..lo + n (a range of one index as lo..lo + 1, which the printer writes as lo)."""
    if n == 1:
        return lo, ir.BinOp("+", lo, ir.Const(1))
    return lo, simplify(add(lo, ext if ext is not None else ir.Const(n)))


def _new_part(ranges, extents, shifts):
    """The ranges and extents of the part of the next box that the current box does not
    hold, where that part is a box: one dimension shifted by s, 0 < |s| < its extent, the
    others not at all, cut to the |s| indices the shift brings in (the pipelined softmax
    reads rows i and i - 1 in one loop: the next row is i + 1 alone). Otherwise unchanged."""
    moved = [d for d, s in enumerate(shifts) if s != 0]
    if None in shifts or len(moved) != 1 or not 0 < abs(shifts[moved[0]]) < extents[moved[0]]:
        return ranges, extents
    d, s = moved[0], shifts[moved[0]]
    lo, hi = ranges[d]
    start = simplify(sub(hi, ir.Const(s))) if s > 0 else lo
    ranges[d], extents[d] = _index_range(start, abs(s)), abs(s)
    return ranges, extents


def continues(extents, shifts, dims) -> bool:
    """Does the next box follow the current one in memory (a stream hardware prefetchers
    follow), or repeat it? True when every shift is 0, when each row is continued by the same
    row (shifts 0 but the last, which moves by at most the row's length), or when the box is
    one contiguous run (extent 1 before some dimension d, whole dimensions after it) and the
    next run starts inside it or right after it."""
    if None in shifts:
        return False
    if all(s == 0 for s in shifts):
        return True
    if all(s == 0 for s in shifts[:-1]) and abs(shifts[-1]) <= extents[-1]:
        return True
    strides = [prod(dims[k + 1:]) for k in range(len(dims))]
    for d in range(len(dims)):
        if all(e == 1 for e in extents[:d]) and list(extents[d + 1:]) == list(dims[d + 1:]):
            run = extents[d] * strides[d]
            delta = sum(s * st for s, st in zip(shifts, strides))
            return abs(delta) <= run
    return False


class Prefetch(Transformation):
    name = "prefetch"
    grammar = "ARRAY at LOOP"
    usage_note = "or ARRAY at LOOP ahead OUTER"

    def parse(self, words):
        """(array, loop, the loop whose next iteration is prefetched, None: loop itself)."""
        if len(words) == 5 and words[3] == "ahead":
            array, loop = super().parse(words[:3])
            return array, loop, (None if words[4] == loop else words[4])
        array, loop = super().parse(words)
        return array, loop, None

    def format(self, params) -> str:
        array, loop, ahead = params
        return f"prefetch {array} at {loop}" + (f" ahead {ahead}" if ahead else "")

    def candidates(self, program):
        for name, (loop, _, around) in scope.loop_table(program).items():
            for array in self._offered_arrays(program, loop, around):
                yield array, name, None
            if around:
                for array in self._offered_ahead(program, loop, around):
                    yield array, name, around[0].iterator

    def _offered_arrays(self, program, loop, around) -> list:
        """The arrays candidates() offers at ``loop`` (see the module docstring)."""
        if not any(isinstance(s, ir.Loop) for s in ir.walk_stmts(loop.body)) \
                or self._loop_problem(loop, around):
            return []
        out = []
        for decl, dims in self._arrays_in(program, loop):
            found = next_box(program, loop, around, decl, use_isl=False)
            if isinstance(found, str) or self._limit_problem(found[1]):
                continue
            if not continues(found[1], found[2], dims):
                out.append(decl.name)
        return out

    def _offered_ahead(self, program, loop, around) -> list:
        """The arrays offered at an innermost ``loop`` ahead of the outermost loop around
        it: streamed along ``loop``, not continued by that loop's next iteration."""
        outer = around[0].iterator
        if any(isinstance(s, ir.Loop) for s in loop.body) \
                or self._loop_problem(loop, around, outer, (1,)):
            return []
        out = []
        for decl, dims in self._arrays_in(program, loop):
            own = next_box(program, loop, around, decl, use_isl=False)
            found = next_box(program, loop, around, decl, use_isl=False, ahead=outer)
            if isinstance(own, str) or isinstance(found, str) \
                    or self._loop_problem(loop, around, outer, found[1]) \
                    or self._limit_problem(found[1]):
                continue
            streamed = any(own[2]) and continues(own[1], own[2], dims)
            other_row = any(found[2][:-1]) and not continues(found[1], found[2], dims)
            if streamed and other_row and self._stream_broken(program, around[0], decl, dims):
                out.append(decl.name)
        return out

    @staticmethod
    def _stream_broken(program, outer, decl, dims) -> bool:
        """Whether the hardware prefetchers lose ``decl``'s stream across iterations of
        ``outer``: its next iteration's box does not continue this one's, or two or more
        innermost loops of its body pass over the array (each pass restarts at the row's
        first line, so no stream runs on into the next row)."""
        whole = next_box(program, outer, [], decl, use_isl=False)
        if isinstance(whole, str) or not continues(whole[1], whole[2], dims):
            return True
        passes = [l for l in ir.walk_stmts(outer.body) if isinstance(l, ir.Loop)
                  and not any(isinstance(s, ir.Loop) for s in l.body)
                  and fp.loop_refs(program, l.iterator, decl.name, include_loop=False)]
        return len(passes) >= 2

    @staticmethod
    def _arrays_in(program, loop):
        """(declaration, constant dims) of the kernel's arrays accessed in ``loop``'s body,
        in the order of their first access."""
        dims_of = {d.name: d for d in program.arrays if d.dims}
        seen = []
        for ref in fp.region_refs(loop.body, None):
            array = ref.access.array
            if array not in seen and array in dims_of:
                seen.append(array)
                decl = dims_of[array]
                yield decl, [const_value(d, program.size_values) for d in decl.dims]

    def offered(self, program, array: str, loop_name: str, ahead: str | None = None) -> bool:
        """True when ``prefetch array at loop_name [ahead ahead]`` is one of the candidates
        (see the module docstring) and is legal."""
        table = scope.loop_table(program)
        if loop_name not in table:
            return False
        loop, _, around = table[loop_name]
        if ahead is None:
            offered = self._offered_arrays(program, loop, around)
        else:
            offered = self._offered_ahead(program, loop, around) \
                if around and around[0].iterator == ahead else []
        return array in offered and self.check(program, (array, loop_name, ahead)) is None

    def _loop_problem(self, loop, around, ahead=None, extents=None):
        """Why no prefetch goes into ``loop``; ``ahead`` and ``extents`` (the box's) for the
        ahead form, which may go into a vector loop when its box is one element."""
        anns = [a for l in around + [loop] for a in l.annotations]
        if any(a.startswith("gpu.") for a in anns):
            return (f"loop '{loop.iterator}' is bound to the GPU grid or inside a bound loop; "
                    "a CPU cache hint has no use there")
        inside = [a for l in around for a in l.annotations]
        if "vector" in inside or ("vector" in loop.annotations and (
                ahead is None or any(e != 1 for e in extents or ()))):
            return (f"loop '{loop.iterator}' is a vector loop or inside one, whose body must "
                    "stay assignments (but for a one-element box ahead of an outer loop); "
                    "prefetch before vectorizing")
        return None

    @staticmethod
    def _limit_problem(extents):
        rows, elements = prod(extents[:-1]), prod(extents)
        if rows > MAX_PREFETCH_ROWS:
            return f"{rows} rows (at most {MAX_PREFETCH_ROWS})"
        if elements > MAX_PREFETCH_ELEMENTS:
            return f"{elements} elements (at most {MAX_PREFETCH_ELEMENTS})"
        return None

    def _plan(self, program, params):
        """(loop, path, the prefetch statement), or the one-sentence reason there is none."""
        array, loop_name, ahead = params
        table = scope.loop_table(program)
        if loop_name not in table:
            return f"there is no loop '{loop_name}'"
        loop, path, around = table[loop_name]
        decl = program.array(array)
        if decl is None or not decl.dims:
            return f"there is no array '{array}' of the kernel to prefetch"
        if ahead is not None and ahead not in [l.iterator for l in around]:
            return f"loop '{ahead}' is not a loop around loop '{loop_name}'"
        found = next_box(program, loop, around, decl, ahead=ahead)
        problem = self._loop_problem(loop, around, ahead,
                                     None if isinstance(found, str) else found[1])
        if problem:
            return problem
        if isinstance(found, str):
            return found
        ranges, extents, _ = found
        too_big = self._limit_problem(extents)
        if too_big:
            return (f"the next iteration's box of '{array}' in loop '{loop_name}' has "
                    f"{too_big}: too much code for a hint")
        if any(isinstance(s, ir.Prefetch) and s.array == array for s in loop.body):
            return f"loop '{loop_name}' already prefetches '{array}'"
        return loop, path, ir.Prefetch(array, ranges)

    def check(self, program, params):
        plan = self._plan(program, params)
        return plan if isinstance(plan, str) else None

    def apply(self, program, params):
        loop, path, stmt = self._plan(program, params)
        return replace_at(program, path, [with_body(loop, (stmt,) + tuple(loop.body))])


PREFETCH = Prefetch()

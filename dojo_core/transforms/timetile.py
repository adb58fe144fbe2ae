"""timetile T by S x W1 [x W2 ...] skew F: tile a time loop with the loop nests it repeats
(time skewing: parallelogram tiles of S time steps by W1 [x W2 ...] points).

    for t in 0..T:                          for t0 in 0..(T + 3) // 4:
      for i in 1..N - 1:                      for i0 in (2*4*t0 + 1) // 32..(N + 2*4*t0 + 6) // 32 + 1:
        B[i] = A[i - 1] + A[i + 1]    ==>       for t in 4*t0..min(T, 4*t0 + 4):
      for i2 in 1..N - 1:                         for i in max(1, 32*i0 - 2*t)..min(N - 1, 32*i0 - 2*t + 32):
        A[i2] = B[i2]                               B[i] = A[i - 1] + A[i + 1]
                                                  for i2 in max(1, 32*i0 - 2*t - 1)..min(N - 1, 32*i0 - 2*t + 31):
                                                    A[i2] = B[i2]
        (timetile t by 4 x 32 skew 2)

Every loop of T's body (its children: T's body holds loops only) is tiled on its first D
levels, which must be perfectly nested, unannotated, and bounded independently of T and of
each other (D = the number of widths). The point x of child k at step t lies in the tile
``floor((x + F*t + s_k) / W)``: the tile's edges lean back F points per step (the skew), and
child k is shifted by ``s_k = c*k`` points, with c the least of 0..F that makes the tiling
legal (a later sweep reading its neighbours' values of the same step needs the shift). The
tiles run in lexicographic order of (time tile, space tiles), each running its steps in
order and, at each step, the children in order over their part of the tile.

Legal exactly when no dependence between two instances inside T runs from a later instance
to an earlier one of this new order: the order is written as a schedule with floor
divisions and checked against the exact dependences (islpy), as for every transformation.
Skewing makes the (usually illegal) rectangular tiling of a stencil's time and space legal:
a tile then reuses its points over S steps while they are in cache.
"""
from __future__ import annotations

from .. import ir
from ..affine import add, mul, simplify, sub
from ..deps import dependences, memo
from ..poly import const_value, isl_name, lex_before_text
from .base import Transformation, parse_int
from .util import declared_names, fresh, find_loop, replace_at, uses_var, with_body

MAX_DIMS = 3
MAX_SKEW = 8


class TimeTile(Transformation):
    name = "timetile"
    grammar = "LOOP by STEPS x WIDTH skew FACTOR"
    usage_note = "more widths tile more levels: timetile t by 8 x 16 x 64 skew 1"

    def parse(self, words: list):
        if len(words) < 7 or len(words) % 2 == 0 or words[1] != "by" or words[-2] != "skew" \
                or any(w != "x" for w in words[3:-2:2]):
            raise self.usage_error()
        steps = parse_int(words[2], "STEPS", self)
        widths = tuple(parse_int(w, "WIDTH", self) for w in words[4:-2:2])
        return words[0], steps, widths, parse_int(words[-1], "FACTOR", self)

    def format(self, params) -> str:
        loop, steps, widths, factor = params
        sizes = " x ".join(str(w) for w in widths)
        return f"{self.name} {loop} by {steps} x {sizes} skew {factor}"

    def candidates(self, program):
        """Each time loop's one-level tile of (at most) 4 steps, skew 1 or 2."""
        sizes = program.size_values
        for loop in time_loops(program):
            n = const_value(sub(loop.hi, loop.lo), sizes)
            widths = [const_value(sub(c.hi, c.lo), sizes) for c in loop.body]
            if n is None or n < 3 or any(w is None or w < 4 for w in widths):
                continue
            width = min(32, min(widths) // 2)
            for factor in (1, 2):
                yield loop.iterator, min(4, n - 1), (width,), factor

    def check(self, program, params):
        name, steps, widths, factor = params
        loop, path = find_loop(program, name)
        if loop is None:
            return f"there is no loop '{name}'"
        if steps < 2:
            return f"a tile must span at least 2 steps, got {steps}"
        if any(w < 2 for w in widths):
            return f"a tile must be at least 2 points wide, got {min(widths)}"
        if len(widths) > MAX_DIMS:
            return f"at most {MAX_DIMS} levels are tiled, got {len(widths)}"
        if not 0 <= factor <= MAX_SKEW:
            return f"the skew factor must be in 0..{MAX_SKEW}, got {factor}"
        if loop.annotations:
            return "annotated loops are not tiled; timetile before annotating"
        stray = next((s for s in loop.body if not isinstance(s, ir.Loop)), None)
        if stray is not None or not loop.body:
            return f"the body of '{name}' must hold loops only"
        for child in loop.body:
            reason = _tiled_levels(child, len(widths), name)
            if isinstance(reason, str):
                return reason
        if _shift_step(program, params) is None:
            return (f"no tiling of '{name}' by {steps} x {' x '.join(map(str, widths))} with skew "
                    f"{factor} keeps every dependence in order (a tile would need values a later "
                    "tile computes); a larger skew may")
        return None

    def apply(self, program, params):
        name, steps, widths, factor = params
        loop, path = find_loop(program, name)
        shift = _shift_step(program, params) or 0     # None: apply alone, unchecked
        taken = declared_names(program)
        levels = [_tiled_levels(child, len(widths), name) for child in loop.body]
        time_tile = fresh(taken, name, 0)
        tile_names = [fresh(taken, lv.iterator, 0) for lv in levels[0]]
        t0 = ir.Var(time_tile)
        step_lo = add(loop.lo, mul(steps, t0))
        step_last = add(step_lo, ir.Const(steps - 1))
        children = []
        for k, (child, lvs) in enumerate(zip(loop.body, levels)):
            children.append(_tiled_child(child, lvs, tile_names, widths, factor, shift * k, name))
        inner_time = ir.Loop(name, step_lo, _min(loop.hi, add(step_lo, ir.Const(steps))), (),
                             tuple(children), loop.loc)
        body = inner_time
        max_shift = shift * (len(loop.body) - 1)
        for d in reversed(range(len(widths))):
            lo = _min_all([lvs[d].lo for lvs in levels])
            hi = _max_all([lvs[d].hi for lvs in levels])
            first = ir.BinOp("//", add(lo, mul(factor, step_lo)), ir.Const(widths[d]))
            last = ir.BinOp("//", simplify(ir.BinOp("+", sub(hi, ir.Const(1)), ir.BinOp(
                "+", _scaled(factor, step_last), ir.Const(max_shift)))), ir.Const(widths[d]))
            body = ir.Loop(tile_names[d], simplify(first), add(simplify(last), ir.Const(1)), (),
                           (body,))
        n_tiles = simplify(ir.BinOp("//", add(sub(loop.hi, loop.lo), ir.Const(steps - 1)),
                                    ir.Const(steps)))
        outer = ir.Loop(time_tile, ir.Const(0), n_tiles, (), (body,))
        return replace_at(program, path, [outer])


def _tiled_levels(child, depth: int, time: str):
    """The first ``depth`` perfectly nested loops of a child, or why they cannot be tiled."""
    levels, node = [], child
    for d in range(depth):
        if not isinstance(node, ir.Loop):
            return f"loop '{child.iterator}' does not have {depth} perfectly nested loops to tile"
        levels.append(node)
        if d + 1 < depth:
            node = node.body[0] if len(node.body) == 1 else None
    for lv in levels:
        if lv.annotations:
            return "annotated loops are not tiled; timetile before annotating"
        for other in [time] + [o.iterator for o in levels]:
            if uses_var([ir.Assign(ir.Access("_", ()), "=", lv.lo),
                         ir.Assign(ir.Access("_", ()), "=", lv.hi)], other):
                return f"the bounds of '{lv.iterator}' depend on '{other}'"
    return levels


def _tiled_child(child, levels, tile_names, widths, factor, shift, time):
    """The child with its tiled levels clipped to the tile: x in
    max(lo, W*tile - F*t - s)..min(hi, W*tile + W - F*t - s)."""
    def rebuild(node, d):
        if d == len(levels):
            return node
        start = sub(mul(widths[d], ir.Var(tile_names[d])),
                    add(_scaled(factor, ir.Var(time)), ir.Const(shift)))
        lo = _max(node.lo, start)
        hi = _min(node.hi, add(start, ir.Const(widths[d])))
        body = (rebuild(node.body[0], d + 1),) if d + 1 < len(levels) else node.body
        return ir.Loop(node.iterator, lo, hi, node.annotations, body, node.loc)
    return rebuild(child, 0)


def _shift_step(program, params):
    """The least c in 0..F for which shifting child k by c*k points makes the tiling legal,
    or None."""
    found = memo(_SHIFTS, (program, params), lambda key: _find_shift(*key), limit=1024)
    return None if found == NO_SHIFT else found


NO_SHIFT = -1              # memoised for "no legal shift" (memo recomputes a None)
_SHIFTS: dict = {}


def _find_shift(program, params) -> int:
    name, steps, widths, factor = params
    loop, _ = find_loop(program, name)
    deps = dependences(program)
    stmts = deps.inside(name)
    child_of = {}
    for s in stmts:
        depth = s.iterators.index(name)
        child_of[s.name] = s.positions[depth + 1]
    for c in range(0, max(factor, 1) + 1):
        def cond(s, t):
            return lex_before_text(_schedule(deps, t, "_t", params, c * child_of[t.name]),
                                   _schedule(deps, s, "_s", params, c * child_of[s.name]))
        if not deps.exists(stmts, stmts, cond):
            return c
        if len(loop.body) == 1:
            return NO_SHIFT
    return NO_SHIFT


def _schedule(deps, stmt, suffix, params, shift):
    """The statement's schedule after the tiling, as ISL texts (see the module docstring)."""
    name, steps, widths, factor = params
    m = deps.model
    base = m.schedule_texts(stmt, suffix)
    depth = stmt.iterators.index(name)
    t = isl_name(name) + suffix
    lo = m.bound_text(stmt.loops[depth].lo, stmt.iterators[:depth], suffix)
    tiles = [f"floor(({t} - {lo})/{steps})"]
    for d, w in enumerate(widths):
        x = isl_name(stmt.iterators[depth + 1 + d]) + suffix
        tiles.append(f"floor(({x} + {factor}*{t} + {shift})/{w})")
    cut = 2 * depth + 1
    return base[:cut] + tiles + base[cut:]


def time_loops(program) -> list:
    """The unannotated loops whose body holds loops only and whose iterator indexes no array
    of that body (every step touches the same data: a stencil's time loop)."""
    return [loop for loop in ir.loops(program)
            if loop.body and not loop.annotations
            and all(isinstance(s, ir.Loop) for s in loop.body)
            and not _indexes_arrays(loop.body, loop.iterator)]


def _indexes_arrays(stmts, name: str) -> bool:
    """Does the iterator appear in an array index of the statements?"""
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ir.Assign):
            for a in [s.target] + [e for e in ir.walk_expr(s.value) if isinstance(e, ir.Access)]:
                if any(name in ir.var_names(i) for i in a.indices):
                    return True
    return False


def _scaled(factor, expr):
    return mul(factor, expr) if factor else ir.Const(0)


def _min(a, b):
    return _pick("min", a, b)


def _max(a, b):
    return _pick("max", a, b)


def _pick(func, a, b):
    a, b = simplify(a), simplify(b)
    if a == b:
        return a
    diff = const_value(sub(b, a), {})
    if diff is not None:
        return a if (diff >= 0) == (func == "min") else b
    return ir.Call(func, (a, b))


def _min_all(exprs):
    out = exprs[0]
    for e in exprs[1:]:
        out = _min(out, e)
    return out


def _max_all(exprs):
    out = exprs[0]
    for e in exprs[1:]:
        out = _max(out, e)
    return out


TIMETILE = TimeTile()

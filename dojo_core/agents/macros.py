"""Macro-actions: sequences of legal steps built from generic optimization knowledge.

A macro is a ``Move(label, steps)``: its steps are ordinary step texts, each legal in the
state its predecessors made (they are found by applying them one by one; a macro whose step
is refused is dropped), so a history of macros is an ordinary history.  No kernel's
``.steps`` file is used or known here; the knowledge is the textbook one (the same rules
Ansor / MetaSchedule sketches use):

* ``vectorize inner``: vectorize every innermost loop that can be (unit-stride lanes).
* ``parallelize outer``: parallelize every outermost loop that can be.
* ``distribute``: fission loops whose body mixes statements and loops, so that reductions
  form perfect nests (an init nest and an update nest); in a loop that holds a
  contraction, a local used on both sides of a cut is expanded first (scalar expansion).
* ``tile a x b x r``: register tiling of a perfect reduction nest ``... a b ... r ...`` with
  a reduction statement ``T[...] op= ...``: split a spatial loop ``a`` by ``ta``, the
  spatial loop ``b`` of ``T``'s last index by ``tb``, the outermost reduction loop by
  ``tr``; bubble the loops (adjacent interchanges) into ``<other loops> a0 b0 r0 r1 <other
  reductions> a1 b1`` (or, "b-outer", ``b0 <other loops> r0 a0 r1 ...``), keep ``T``'s
  tile in registers (accumulate at r1), cut the partial last tiles of ``a`` and ``b`` into
  loops of their own (``partition a0``, ``partition b0``: the full tiles keep constant
  extents at any size), unroll ``a1``, vectorize ``b1``, optionally stage
  an input that ``a`` does not index at ``r0`` (a packed panel), then vectorize inner /
  parallelize outer loops.  The reduction is also left whole (``r/all``: the tile runs all of it, so ``T`` is loaded and stored
  once; the panel is then staged at ``b0``, in the ``b0 a0`` order).
  The tile sizes come from the target and the dtype of ``T`` (``tiling.py``: vector lanes
  from the vector width and the element size, a register budget from the target's vector
  registers, shapes ranked by reuse, reduction blocks that keep the panel in half of L1);
  nothing is fitted to one ISA.
  When ``b``'s extent is not a multiple of the vector lanes (a 3x3 convolution's
  56-wide rows), the tile is also tried transposed: another spatial loop
  ``v`` (the output channels) becomes the vector loop and ``b`` the unrolled one; ``T``'s
  tile and the staged panel are laid out with ``v``'s dimension last (``layout``), so that
  ``v`` is unit-stride in both.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from .. import ir
from ..codegen.c_expr import ITEMSIZE
from ..codegen.targets import get_target
from ..transforms import actions, apply_step
from ..transforms.base import NotApplicable
from ..transforms.fission import uses_array
from ..transforms.split import split_names
from .tiling import reduction_blocks, register_tiles, row_tiles


@dataclass(frozen=True)
class Move:
    """One agent move: a label and the steps it applies (one step for an atomic action);
    ``bonus`` is the macro's own rank among its variants (0 best, lower worse) that the
    default prior adds."""
    label: str
    steps: tuple
    kind: str = "macro"
    bonus: float = 0.0


class _Builder:
    """Applies steps one by one, remembering them; any refusal aborts the macro."""

    def __init__(self, program):
        self.program, self.steps = program, []

    def step(self, text: str) -> None:
        self.program = apply_step(self.program, text)
        self.steps.append(text)

    def maybe(self, text: str) -> bool:
        try:
            self.step(text)
            return True
        except NotApplicable:
            return False


def _parents(program) -> dict:
    """id(loop or statement) -> its enclosing Loop (None at top level)."""
    found = {}

    def visit(body, parent):
        for stmt in body:
            found[id(stmt)] = parent
            if isinstance(stmt, ir.Loop):
                visit(stmt.body, stmt)
    visit(program.body, None)
    return found


def vectorize_inner_steps(program) -> list:
    """Vectorize steps for the innermost loops whose accesses are all unit-stride or
    invariant in the loop (a strided access becomes a gather: attention's P @ V with the
    key loop innermost ran slower vectorized than scalar), except loops of fewer than 4
    iterations and the loops that only copy a register tile in or out: gcc keeps such a
    tile in registers when those copies are scalar, and spills it when they are vector loads
    and stores (measured: 8x32 matmul tile, 230 vs 125 GFLOP/s on Zen 5)."""
    legal = {a.text for a in actions(program) if a.kind == "vectorize"}
    registers = {s.name for s in ir.walk_stmts(program.body)
                 if isinstance(s, ir.Local) and s.space == "register"}
    from .features import analyze        # features imports this module
    loops = analyze(program).loops
    inner = [l for l in ir.loops(program) if not any(isinstance(s, ir.Loop) for s in l.body)]
    return [f"vectorize {l.iterator}" for l in inner if f"vectorize {l.iterator}" in legal
            and not _copies_register_tile(l, registers)
            and not (l.iterator in loops and loops[l.iterator].counts["strided"])
            and (_extent(program, l.iterator) or 4) >= 4]


def _copies_register_tile(loop, registers: set) -> bool:
    return bool(registers) and all(
        isinstance(s, ir.Assign) and s.op == "=" and isinstance(s.value, ir.Access)
        and registers & {s.target.array, s.value.array} for s in loop.body)


def parallelize_outer_steps(program) -> list:
    """The outermost loop of each top-level nest that can run in parallel, looking through
    loops of fewer than 4 iterations (no parallelism to gain there)."""
    legal = {a.text for a in actions(program) if a.kind == "parallelize"}
    found = []
    for stmt in program.body:
        while isinstance(stmt, ir.Loop):
            extent = _extent(program, stmt.iterator)
            if f"parallelize {stmt.iterator}" in legal and (extent is None or extent >= 4):
                found.append(f"parallelize {stmt.iterator}")
                break
            loops = [s for s in stmt.body if isinstance(s, ir.Loop)]
            stmt = loops[0] if len(loops) == 1 else None
    return found


def _finish(b: _Builder, vectorize=True, parallelize=True) -> None:
    for _ in range(8):              # each vectorize can change what is innermost
        texts = vectorize_inner_steps(b.program) if vectorize else []
        if not texts or not b.maybe(texts[0]):
            break
    if parallelize:
        for text in parallelize_outer_steps(b.program):
            b.maybe(text)


def distribute_steps(program) -> list:
    """Fissions (legal ones) until no loop mixes statements with loops or holds several loops.
    In a loop that holds a contraction (a nest of two or more loops reducing into an array),
    a local used on both sides of a cut is expanded first (one slot per iteration), so that
    the contraction can become a perfect nest of its own."""
    b = _Builder(program)
    for _ in range(16):
        names = {id(s): f"s{i}" for i, s in enumerate(ir.assignments(b.program))}
        done = True
        for loop in ir.loops(b.program):
            body = loop.body
            if len(body) < 2 or not any(isinstance(s, ir.Loop) for s in body):
                continue
            for k in range(len(body) - 1):
                head = body[k]
                ref = names.get(id(head)) if isinstance(head, ir.Assign) else \
                    head.iterator if isinstance(head, ir.Loop) else None
                if ref and (b.maybe(f"fission {loop.iterator} after {ref}")
                            or _fission_expanding(b, loop, k, ref)):
                    done = False
                    break
            if not done:
                break
        if done:
            break
    return b.steps


def _holds_contraction(loop) -> bool:
    """A reduction into an array two or more loops below loop's body (a matmul-like nest)."""
    def go(body, depth):
        return any(go(s.body, depth + 1) if isinstance(s, ir.Loop)
                   else isinstance(s, ir.Assign) and s.op != "=" and bool(s.target.indices)
                   and depth >= 2 for s in body)
    return go(loop.body, 0)


def _fission_expanding(b: _Builder, loop, k: int, ref: str) -> bool:
    """`fission loop after ref` after expanding the locals of loop used on both sides of
    the cut, when loop holds a contraction; the builder is unchanged when that fails."""
    if not _holds_contraction(loop):
        return False
    first, second = loop.body[:k + 1], loop.body[k + 1:]
    shared = [s.name for s in first if isinstance(s, ir.Local)
              and uses_array(first, s.name) and uses_array(second, s.name)]
    if not shared:
        return False
    trial = _Builder(b.program)
    if all(trial.maybe(f"expand {name} at {loop.iterator}") for name in shared) \
            and trial.maybe(f"fission {loop.iterator} after {ref}"):
        b.program, b.steps = trial.program, b.steps + trial.steps
        return True
    return False


def _perfect_reduction_nests(program) -> list:
    """[(chain of loops outer to inner, statement)] for perfect nests ending in one reduction."""
    parents, found = _parents(program), []
    for stmt in ir.assignments(program):
        if stmt.op == "=":
            continue
        chain, node = [], parents[id(stmt)]
        while node is not None and len(node.body) == 1:
            chain.append(node)
            node = parents[id(node)]
        if len(chain) >= 2:
            found.append((list(reversed(chain)), stmt))
    return found


def _uses(expr, name: str) -> bool:
    return any(isinstance(e, ir.Var) and e.name == name for e in ir.walk_expr(expr))


def _bubble(b: _Builder, order: list) -> None:
    """Adjacent interchanges turning the (perfect) chain into ``order``."""
    current = list(order)
    current.sort(key=lambda it: _chain_position(b.program, it))
    for target_pos, it in enumerate(order):
        pos = current.index(it)
        while pos > target_pos:
            b.step(f"interchange {current[pos - 1]} {it}")
            current[pos - 1], current[pos] = current[pos], current[pos - 1]
            pos -= 1


def _chain_position(program, iterator: str) -> int:
    return [l.iterator for l in ir.loops(program)].index(iterator)


def _extent(program, iterator: str):
    from ..kernels import eval_dim
    loop = next(l for l in ir.loops(program) if l.iterator == iterator)
    try:
        return eval_dim(loop.hi, program.size_values) - eval_dim(loop.lo, program.size_values)
    except (ValueError, KeyError, TypeError):
        return None


def tile_moves(program, target=None, threads=None) -> list:
    """Register-tiling macros for each perfect reduction nest (see the module docstring),
    sized for ``target`` (a Target, a target name, or None for this machine's); with
    ``threads`` 1 the tiles are not parallelized (an OpenMP region around the vector tile
    is pure overhead there: 0.69x on PolyBench gemm f32 with AVX-512).
    The loop structure is built (and checked) once per variant; the tile sizes are then
    substituted into its split steps (agents replay every move before measuring it)."""
    target = get_target(target)
    pre = distribute_steps(program)
    base = program
    for text in pre:
        base = apply_step(base, text)
    moves = []
    for chain, stmt in _perfect_reduction_nests(base)[:2]:
        iters = [l.iterator for l in chain]
        spatial = [it for it in iters if any(_uses(e, it) for e in stmt.target.indices)]
        reduction = [it for it in iters if it not in spatial]
        last = stmt.target.indices[-1] if stmt.target.indices else None
        bs = [it for it in spatial if last is not None and _uses(last, it)]
        if not reduction or not bs:
            continue
        itemsize = ITEMSIZE.get(_dtype_of(base, stmt.target.array), 4)
        lanes = target.lanes(itemsize)
        bi = bs[-1]
        ais = [it for it in spatial if it != bi]
        pairs = [(ais[-1] if ais else None, bi)]
        n = _extent(base, bi)
        if n is not None and n % lanes:
            pairs += [(bi, v) for v in ais if (_extent(base, v) or 0) % lanes == 0]
        for ai, bi in pairs:
            parallel = threads != 1
            found = _tile_variants(base, pre, iters, stmt, reduction, ai, bi, target, itemsize,
                                   parallel)
            if not found and ai is not None:     # a triangular nest: b's bounds depend on a
                found = _tile_variants(base, pre, iters, stmt, reduction, None, bi, target,
                                       itemsize, parallel)
            moves.extend(found)
    return moves


def _dtype_of(program, name: str) -> str:
    for decl in program.arrays:
        if decl.name == name:
            return decl.dtype
    for stmt in ir.walk_stmts(program.body):
        if isinstance(stmt, ir.Local) and stmt.name == name:
            return stmt.dtype
    return "f32"


def _tile_sizes(base, ai, bi, reduction, target, itemsize) -> list:
    """[(ta, tb, [tr, ...], rank)] for one (a, b) choice, best first (``tiling.py``)."""
    n_b, n_r = _extent(base, bi), _extent(base, reduction[0])
    if ai is None:
        shapes = row_tiles(target, itemsize, n_b)
    else:
        shapes = register_tiles(target, itemsize, _extent(base, ai), n_b)
    sizes = []
    for rank, shape in enumerate(shapes):
        if n_b is not None and shape.cols >= n_b:
            continue
        blocks = [b for b in reduction_blocks(target, itemsize, shape.cols)
                  if n_r is None or b < n_r]
        sizes.append((shape.rows if ai else None, shape.cols, blocks, rank))
    return sizes


def _tile_variants(base, pre, iters, stmt, reduction, ai, bi, target, itemsize,
                   parallel=True) -> list:
    """The tile moves of one (a, b) choice: loop orders x staged input x sizes."""
    inputs = sorted({e.array for e in ir.walk_expr(stmt.value) if isinstance(e, ir.Access)
                     and (ai is None or not any(_uses(i, ai) for i in e.indices))})
    sizes = _tile_sizes(base, ai, bi, reduction, target, itemsize)
    if not sizes:
        return []
    extents = (_extent(base, ai) if ai else None, _extent(base, bi),
               _extent(base, reduction[0]))

    def signature(ta, tb, tr):
        """Which of the splits leave a tail: the steps that apply (unroll, vectorize of a
        constant extent) differ with it, so each signature gets a structure of its own."""
        return tuple(n is not None and f is not None and n % f != 0
                     for n, f in zip(extents, (ta, tb, tr)))

    moves = []
    for whole, outer_b, stage in product((False, True), (False, True) if ai else (False,),
                                         [None] + inputs[:1]):
        built = {}
        for ta, tb, blocks, rank in sizes:
            for k, tr in enumerate([None] if whole else blocks):
                sig = signature(ta, tb, tr)
                if sig not in built:
                    try:
                        built[sig] = _tile(base, iters, ai, bi, reduction, ta, tb, tr,
                                           outer_b, stage, stmt.target.array, parallel)
                    except (NotApplicable, ValueError):
                        built[sig] = None
                steps = built[sig]
                if steps is None:
                    continue
                sized = [_resize(t, {ai: ta, bi: tb, reduction[0]: tr}) for t in steps]
                label = (f"tile {ai}/{ta} x " if ai else "tile ") + \
                    f"{bi}/{tb} x {reduction[0]}/{'all' if whole else tr}" + \
                    (" b-outer" if outer_b else "") + (f" stage {stage}" if stage else "")
                moves.append(Move(label, tuple(pre) + tuple(sized), bonus=-0.1 * (rank + k)))
    return moves


def _last_dim_layout(program, buffer: str, iterator: str):
    """``layout BUFFER ...`` moving the dimension that ``iterator`` indexes (in the first
    access of BUFFER that uses it) last; None when it already is, or no access uses it."""
    for stmt in ir.assignments(program):
        for e in [stmt.target, *ir.walk_expr(stmt.value)]:
            if isinstance(e, ir.Access) and e.array == buffer:
                used = [d for d, index in enumerate(e.indices) if _uses(index, iterator)]
                if not used:
                    continue
                if len(used) > 1 or used[0] == len(e.indices) - 1:
                    return None
                order = [d for d in range(len(e.indices)) if d != used[0]] + used
                return f"layout {buffer} " + " ".join(map(str, order))
    return None


def tile_sizes(label: str) -> list:
    """The size words of a tile macro's label, in order (``ta``, ``tb``, ``tr``; ``tr`` may
    be ``all``; no ``ta`` for a one-dimensional tile); [] for any other label."""
    if not label.startswith("tile "):
        return []
    return [w.split("/")[1] for w in label.split() if "/" in w]


def _resize(text: str, factors: dict) -> str:
    words = text.split()
    if words[0] == "split" and words[1] in factors and factors[words[1]] is not None:
        return f"split {words[1]} by {factors[words[1]]}"
    return text


def _tile(base, iters, ai, bi, reduction, ta, tb, tr, outer_b, stage, target,
          parallel=True) -> list:
    b = _Builder(base)
    if ai is not None:
        a0, a1 = split_names(b.program, ai)
        b.step(f"split {ai} by {ta}")
    b0, b1 = split_names(b.program, bi)
    b.step(f"split {bi} by {tb}")
    r = reduction[0]
    if tr is None:                   # the whole reduction: a panel is staged at b0
        r0, r1 = None, r
        stage_at = b0 if outer_b or ai is None else None
    else:
        r0, r1 = split_names(b.program, r)
        b.step(f"split {r} by {tr}")
        stage_at = r0
    others = [it for it in iters if it not in (ai, bi) and it not in reduction]
    inner_red = [r1] + reduction[1:]
    if ai is None:
        head, tile = [b0, r0], [b1]
    else:
        head, tile = ([b0, r0, a0] if outer_b else [a0, b0, r0]), [a1, b1]
    if outer_b:                      # b0 outermost of all: its panel is staged once
        others, head = [b0] + others, head[1:]
    _bubble(b, others + [it for it in head if it] + inner_red + tile)
    b.step(f"accumulate {target} at {r1} as acc in register")
    staged = bool(stage and stage_at and b.maybe(f"stage {stage} at {stage_at} as {stage}p"))
    for buffer in ["acc"] + ([f"{stage}p"] if staged else []):
        layout = _last_dim_layout(b.program, buffer, b1)
        if layout:
            b.step(layout)
    for outer in (a0 if ai is not None else None, b0):
        if outer is not None:          # the last, partial tile gets a loop of its own
            b.maybe(f"partition {outer}")
    if ai is not None:
        b.maybe(f"unroll {a1}")
    b.step(f"vectorize {b1}")
    _finish(b, parallelize=parallel)
    return b.steps


def macro_moves(program, tile=True, target=None, threads=None) -> list:
    """Every macro that applies to this state and changes it, tiles sized for ``target``
    (None: this machine's); no parallelizing macros for an evaluator of one thread."""
    moves = []
    b = _Builder(program)
    _finish(b, parallelize=False)
    if b.steps:
        moves.append(Move("vectorize inner", tuple(b.steps)))
    if threads != 1:
        steps = parallelize_outer_steps(program)
        if steps:
            moves.append(Move("parallelize outer", tuple(steps)))
        b = _Builder(program)
        _finish(b)
        if b.steps and len(b.steps) > 1:
            moves.append(Move("vectorize inner + parallelize outer", tuple(b.steps)))
    if tile:
        try:
            moves.extend(tile_moves(program, target, threads))
        except NotApplicable:
            pass
    return moves

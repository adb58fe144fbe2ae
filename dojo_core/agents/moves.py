"""The generic macro steps that every macro builds on: a ``Move`` (a label and its steps),
a ``Builder`` that applies steps one by one and drops a macro at the first refusal, and the
textbook step lists: vectorize the innermost loops, parallelize the outermost ones,
distribute (fission) loops so that reductions form perfect nests.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..printer import statement_ref
from ..transforms import REGISTRY, apply_step
from ..transforms.base import NotApplicable
from ..transforms.fission import uses_array
from .features import analyze


@dataclass(frozen=True)
class Move:
    """One agent move: a label and the steps it applies (one step for an atomic action);
    ``bonus`` is the macro's own rank among its variants (0 best, lower worse) that the
    default prior adds."""
    label: str
    steps: tuple
    kind: str = "macro"
    bonus: float = 0.0


class Builder:
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


def parents(program) -> dict:
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
    iterations and the loops that only copy a register tile in or out, or set it to a
    literal: gcc keeps such a tile in registers when those copies are scalar, and spills it
    when they are vector loads and stores (measured: 8x32 matmul tile, 230 vs 125 GFLOP/s
    on Zen 5)."""
    registers = {s.name for s in ir.walk_stmts(program.body)
                 if isinstance(s, ir.Local) and s.space == "register"}
    loops = analyze(program).loops
    inner = [l for l in ir.loops(program) if not any(isinstance(s, ir.Loop) for s in l.body)]
    return [f"vectorize {l.iterator}" for l in inner
            if not _copies_register_tile(l, registers)
            and not (l.iterator in loops and loops[l.iterator].counts["strided"])
            and (loop_extent(program, l.iterator) or 4) >= 4
            and is_legal(program, f"vectorize {l.iterator}")]


def is_legal(program, text: str) -> bool:
    """Whether a step is legal in this state: its transformation's check alone (the same
    answer as ``transforms.explain``, without building the transformed program)."""
    words = text.split()
    t = REGISTRY[words[0]]
    try:
        return t.check(program, t.parse(words[1:])) is None
    except NotApplicable:
        return False


def _copies_register_tile(loop, registers: set) -> bool:
    """Does the loop only copy a register tile in or out, or set it to a literal?"""
    return bool(registers) and all(
        isinstance(s, ir.Assign) and s.op == "=" and (
            isinstance(s.value, ir.Access) and registers & {s.target.array, s.value.array}
            or isinstance(s.value, ir.Const) and s.target.array in registers)
        for s in loop.body)


def parallelize_outer_steps(program) -> list:
    """The outermost loop of each top-level nest that can run in parallel, looking through
    loops of fewer than 4 iterations (no parallelism to gain there)."""
    found = []
    for stmt in program.body:
        while isinstance(stmt, ir.Loop):
            extent = loop_extent(program, stmt.iterator)
            if (extent is None or extent >= 4) and \
                    is_legal(program, f"parallelize {stmt.iterator}"):
                found.append(f"parallelize {stmt.iterator}")
                break
            loops = [s for s in stmt.body if isinstance(s, ir.Loop)]
            stmt = loops[0] if len(loops) == 1 else None
    return found


def finish(b: Builder, vectorize=True, parallelize=True) -> None:
    for _ in range(8):              # each vectorize can change what is innermost
        texts = vectorize_inner_steps(b.program) if vectorize else []
        if not texts or not b.maybe(texts[0]):
            break
    if parallelize:
        for text in parallelize_outer_steps(b.program):
            b.maybe(text)


def distribute_steps(program, expand_once: bool = False) -> list:
    """Fissions (legal ones) until no loop mixes statements with loops, holds several loops
    or holds several reductions into arrays.
    In a loop that holds a contraction (a nest of two or more loops reducing into an array),
    a local used on both sides of a cut is expanded first (one slot per iteration), so that
    the contraction can become a perfect nest of its own.  With ``expand_once`` a local or
    temp is expanded at one loop at most (the first cut that needs it, the innermost): the
    loops around stay whole rather than grow it by their extents (doitgen's ``sum`` stays
    ``[NQ, NP]`` in L1 instead of ``[NR, NQ, NP]``)."""
    b = Builder(program)
    expanded = set() if expand_once else None
    for _ in range(16):
        names = {id(s): statement_ref(i) for i, s in enumerate(ir.numbered(b.program))}
        done = True
        for loop in ir.loops(b.program):
            body = loop.body
            if len(body) < 2 or not (any(isinstance(s, ir.Loop) for s in body)
                                     or _several_array_reductions(body)):
                continue
            for k in range(len(body) - 1):
                head = body[k]
                ref = names.get(id(head)) if isinstance(head, ir.Assign) else \
                    head.iterator if isinstance(head, ir.Loop) else None
                if ref and (b.maybe(f"fission {loop.iterator} after {ref}")
                            or _fission_expanding(b, loop, k, ref, expanded)):
                    done = False
                    break
            if not done:
                break
        if done:
            break
    return b.steps


def _several_array_reductions(body) -> bool:
    """Statements only, two or more of them reductions into arrays (``G[i, j] += ..`` beside
    ``Y[i, j] += ..``): each can be a perfect reduction nest, and so a register tile, of its
    own once they are cut apart."""
    return all(isinstance(s, ir.Assign) for s in body) and sum(
        s.op != "=" and bool(s.target.indices) for s in body) >= 2


def _holds_contraction(loop) -> bool:
    """A reduction into an array two or more loops below loop's body (a matmul-like nest)."""
    def go(body, depth):
        return any(go(s.body, depth + 1) if isinstance(s, ir.Loop)
                   else isinstance(s, ir.Assign) and s.op != "=" and bool(s.target.indices)
                   and depth >= 2 for s in body)
    return go(loop.body, 0)


def _fission_expanding(b: Builder, loop, k: int, ref: str, expanded=None) -> bool:
    """`fission loop after ref` after expanding the locals of loop (and the kernel's temps)
    used on both sides of the cut, when loop holds a contraction; the builder is unchanged
    when that fails.  ``expanded`` (a set, or None for no limit): the names expanded so far,
    none of which is expanded again."""
    if not _holds_contraction(loop):
        return False
    first, second = loop.body[:k + 1], loop.body[k + 1:]
    names = [s.name for s in first if isinstance(s, ir.Local)] + \
        [d.name for d in b.program.arrays if d.kind == "temp"]
    shared = [name for name in names if uses_array(first, name) and uses_array(second, name)]
    if not shared or (expanded is not None and expanded & set(shared)):
        return False
    trial = Builder(b.program)
    if all(trial.maybe(f"expand {name} at {loop.iterator}") for name in shared) \
            and trial.maybe(f"fission {loop.iterator} after {ref}"):
        b.program, b.steps = trial.program, b.steps + trial.steps
        if expanded is not None:
            expanded.update(shared)
        return True
    return False


def uses(expr, name: str) -> bool:
    return any(isinstance(e, ir.Var) and e.name == name for e in ir.walk_expr(expr))


def loop_extent(program, iterator: str):
    from ..kernels import eval_dim
    loop = next(l for l in ir.loops(program) if l.iterator == iterator)
    try:
        return eval_dim(loop.hi, program.size_values) - eval_dim(loop.lo, program.size_values)
    except (ValueError, KeyError, TypeError):
        return None


def bubble(b: Builder, order: list) -> None:
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

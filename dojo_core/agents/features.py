"""Numeric features of program states and of actions (issue 7): what the learned agents see.

``state_features(program) -> np.ndarray``: float32, length ``FEATURE_DIM``; entry ``i`` is
``STATE_FEATURES[i]`` (name, meaning) below.  ``action_features(program, text)``: float32,
length ``ACTION_DIM``, entries ``ACTION_FEATURES``: the transformation kind one-hot and the
properties of what the step names (its loops, split factor, memory space, GPU axis).

Guarantees: deterministic (a pure function of the IR, no randomness, no timing), fixed
length for every program, finite values (counts and base-2 logarithms ``log2(1 + x)``, so
zero stays zero), and fast: one walk over the IR, cached per program object, so scoring all
the actions of a state costs one analysis.  Extents are evaluated at the kernel's sizes with
every enclosing iterator at its lower bound (a ``min()`` tail loop counts as its full tile);
a bound that cannot be evaluated counts as 1.  Byte counts are naive (every access counted
at every iteration, no cache reuse), good enough to compare states of one kernel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import ir
from ..affine import linear
from .labels import tile_sizes

DTYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "i8": 1}
L1_BYTES, L2_BYTES = 32 * 1024, 1024 * 1024
TRANSCENDENTAL = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "pow")

STATE_FEATURES = (
    ("loops", "number of loops"),
    ("max_depth", "deepest loop nesting"),
    ("mean_assign_depth", "mean number of loops around an assignment"),
    ("assigns", "number of assignments"),
    ("reductions", "assignments with a reduction op (+=, *=, max=, min=)"),
    ("top_level", "statements at the top of the body"),
    ("parallel_loops", "loops annotated parallel"),
    ("vector_loops", "loops annotated vector"),
    ("unroll_loops", "loops annotated unroll"),
    ("gpu_loops", "loops bound to a GPU axis"),
    ("parallel_outermost", "parallel loops at depth 0"),
    ("log2_parallel_iters", "log2(1 + largest iteration count of an outermost parallel loop)"),
    ("vector_contiguous_frac", "share of accesses in vector loops that are unit-stride or invariant"),
    ("log2_vector_extent", "log2(1 + mean extent of vector loops)"),
    ("log2_unrolled_iters", "log2(1 + total extent of unrolled loops)"),
    ("tail_loops", "loops whose bound has a min() (split tails)"),
    ("log2_max_extent", "log2(1 + largest loop extent)"),
    ("log2_innermost_extent", "log2(1 + mean extent of innermost loops)"),
    ("inner_unit_frac", "share of accesses (weighted by executions) unit-stride in their innermost loop"),
    ("inner_invariant_frac", "share of accesses invariant in their innermost loop"),
    ("inner_strided_frac", "share of accesses with another stride in their innermost loop"),
    ("locals", "local buffers"),
    ("locals_register", "locals in register"),
    ("locals_stack", "locals in stack"),
    ("locals_shared", "locals in GPU shared memory"),
    ("locals_default", "locals without a memory space"),
    ("log2_local_bytes", "log2(1 + total bytes of locals)"),
    ("log2_local_bytes_max", "log2(1 + bytes of the largest local)"),
    ("locals_over_l1", "locals larger than 32 KiB"),
    ("locals_over_l2", "locals larger than 1 MiB"),
    ("log2_local_allocs", "log2(1 + times locals are (re)entered: their scope's trip count)"),
    ("mean_local_depth", "mean loop depth of local declarations"),
    ("log2_flops", "log2(1 + arithmetic operations executed)"),
    ("log2_transcendentals", "log2(1 + exp/log/sqrt/rsqrt/tanh/erf/pow calls executed)"),
    ("log2_divisions", "log2(1 + divisions executed)"),
    ("log2_global_access_bytes", "log2(1 + bytes of in/out/temp array accesses executed)"),
    ("log2_local_access_bytes", "log2(1 + bytes of local accesses executed)"),
    ("log2_array_bytes", "log2(1 + declared bytes of the kernel's arrays)"),
    ("log2_intensity", "log2_flops - log2_array_bytes"),
    ("log2_executions", "log2(1 + assignments executed)"),
    ("inner_assigns_mean", "mean assignments directly in an innermost loop"),
    ("perfect_depth_max", "deepest perfect loop nest"),
    ("log2_outer_extent", "log2(1 + extent of the first top-level loop)"),
    ("carried_reduction_frac", "share of reductions whose target is invariant in the innermost loop"),
    ("gpu_block_loops", "loops bound to gpu.block.*"),
    ("gpu_thread_loops", "loops bound to gpu.thread.*"),
    ("log2_inner_footprint", "log2(1 + largest bytes one full run of an innermost loop touches)"),
    ("inner2_over_l1", "1 if some two-deep inner nest touches more than 32 KiB"),
)
FEATURE_NAMES = tuple(name for name, _ in STATE_FEATURES)
FEATURE_DIM = len(STATE_FEATURES)

KINDS = ("split", "interchange", "merge", "fuse", "fission", "reorder", "hoist",
         "parallelize", "vectorize", "unroll", "bind", "stage", "accumulate", "layout",
         "inline", "materialize")
SPACES = ("none", "register", "stack", "shared")
ACTION_FEATURES = tuple((f"kind_{k}", f"the step is a {k}") for k in KINDS) + (
    ("kind_other", "a kind not listed (a newer transformation)"),
    ("loop_log2_extent", "log2(1 + extent of the first loop the step names)"),
    ("loop_depth", "its nesting depth"),
    ("loop_innermost", "1 if it holds no loop"),
    ("loop_outermost", "1 if it is at depth 0"),
    ("loop_unit_frac", "share of accesses in its body unit-stride in its iterator"),
    ("loop_invariant_frac", "share of accesses in its body invariant in its iterator"),
    ("loop_strided_frac", "share of accesses in its body with another stride"),
    ("loop_carried_reduction", "1 if a reduction in its body is invariant in its iterator"),
    ("loop_annotated", "1 if it already carries an annotation"),
    ("loop_log2_body_iters", "log2 of the iterations of the loops inside it (0: innermost)"),
    ("loop_tail", "1 if its bound has a min()"),
    ("loop2_log2_extent", "log2(1 + extent of the second loop named)"),
    ("loop2_innermost", "1 if the second loop holds no loop"),
    ("log2_factor", "log2 of the split factor (0 if none)"),
    ("factor_divides", "1 if the factor divides the loop extent"),
    ("log2_factor_ratio", "log2(extent / factor), 0 if none"),
) + tuple((f"space_{s}", f"memory space {s}") for s in SPACES) + (
    ("gpu_block", "binds to gpu.block.*"),
    ("gpu_thread", "binds to gpu.thread.*"),
    ("names_global_array", "1 if the step names an in/out/inout/temp array"),
    ("array_rank", "rank of the array the step names"),
    ("macro", "1 for a macro move (text 'macro: LABEL', agents/macros.py)"),
    ("macro_tile", "1 for a register-tiling macro"),
    ("macro_log2_tile_a", "log2(1 + its unrolled tile extent)"),
    ("macro_log2_tile_b", "log2(1 + its vector tile extent)"),
    ("macro_whole_reduction", "1 if the tile runs the whole reduction"),
    ("macro_b_outer", "1 if the vector tile's outer loop is outermost"),
    ("macro_stage", "1 if it stages a panel of an input"),
)
MACRO_PREFIX = "macro:"
ACTION_NAMES = tuple(name for name, _ in ACTION_FEATURES)
ACTION_DIM = len(ACTION_FEATURES)


def _lg(x: float) -> float:
    return math.log2(1.0 + max(0.0, float(x)))


def _eval(expr, env: dict) -> float:
    """Integer value of an index/bound expression, or raise KeyError/ValueError."""
    if isinstance(expr, ir.Const):
        return expr.value
    if isinstance(expr, ir.Var):
        return env[expr.name]
    if isinstance(expr, ir.Neg):
        return -_eval(expr.operand, env)
    if isinstance(expr, ir.BinOp):
        a, b = _eval(expr.lhs, env), _eval(expr.rhs, env)
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
               "//": lambda: a // b, "%": lambda: a % b, "/": lambda: a / b}
        if expr.op in ops:
            return ops[expr.op]()
    if isinstance(expr, ir.Call) and expr.func in ("min", "max"):
        vals = [_eval(a, env) for a in expr.args]
        return min(vals) if expr.func == "min" else max(vals)
    raise ValueError("not evaluable")


def _stride(access: ir.Access, iterator: str) -> str:
    """'invariant', 'unit' or 'strided' for an access as ``iterator`` advances."""
    coeffs = []
    for index in access.indices:
        try:
            form = linear(index)
            coeffs.append(sum(c for k, c in form.items()
                              if isinstance(k, ir.Var) and k.name == iterator))
            if any(not isinstance(k, (ir.Var, int)) and iterator in _names(k) for k in form):
                return "strided"
        except Exception:                                               # noqa: BLE001
            return "strided" if iterator in _names(index) else "invariant"
    if not any(coeffs):
        return "invariant"
    if coeffs[-1] in (1, -1) and not any(coeffs[:-1]):
        return "unit"
    return "strided"


def _names(expr) -> set:
    return {e.name for e in ir.walk_expr(expr) if isinstance(e, ir.Var)}


@dataclass
class LoopInfo:
    loop: ir.Loop
    depth: int
    extent: int
    innermost: bool
    tail: bool
    body_iters: int = 1
    counts: dict = field(default_factory=lambda: {"unit": 0, "invariant": 0, "strided": 0})
    carried_reduction: bool = False


@dataclass
class Analysis:
    features: np.ndarray
    loops: dict                     # iterator -> LoopInfo
    globals: dict                   # array name -> ArrayDecl


class _Walker:
    def __init__(self, program: ir.Program):
        self.program = program
        self.env = dict(program.size_values)
        self.f = dict.fromkeys(FEATURE_NAMES, 0.0)
        self.loops: dict = {}
        self.dtypes = {a.name: a.dtype for a in program.arrays}
        self.globals = {a.name: a for a in program.arrays}
        self.acc = {"unit": 0.0, "invariant": 0.0, "strided": 0.0}
        self.vec = [0, 0]
        self.flops = self.trans = self.divs = self.gbytes = self.lbytes = self.execs = 0.0
        self.assign_depths, self.inner_assigns, self.vector_extents = [], [], []
        self.local_bytes, self.local_depths, self.local_allocs = [], [], 0.0
        self.inner_footprint, self.inner2_over = 0.0, 0.0
        self.reductions_carried = 0

    def extent(self, loop: ir.Loop) -> tuple:
        try:
            lo, hi = _eval(loop.lo, self.env), _eval(loop.hi, self.env)
            return max(1, int(hi - lo)), lo
        except (KeyError, ValueError, ZeroDivisionError, TypeError):
            return 1, 0

    def walk(self, body, stack: list, trips: float) -> int:
        """Walk a body under the loop stack; returns the iterations of the loops inside."""
        inner_iters = 1
        for stmt in body:
            if isinstance(stmt, ir.Loop):
                inner_iters = max(inner_iters, self.loop(stmt, stack, trips))
            elif isinstance(stmt, ir.Local):
                self.local(stmt, stack, trips)
            elif isinstance(stmt, ir.Assign):
                self.assign(stmt, stack, trips)
        return inner_iters

    def loop(self, loop: ir.Loop, stack: list, trips: float) -> int:
        extent, lo = self.extent(loop)
        info = LoopInfo(loop, len(stack), extent,
                        innermost=not any(isinstance(s, ir.Loop) for s in loop.body),
                        tail=any(isinstance(e, ir.Call) and e.func == "min"
                                 for e in ir.walk_expr(loop.hi)))
        self.loops[loop.iterator] = info
        f = self.f
        f["loops"] += 1
        f["max_depth"] = max(f["max_depth"], len(stack) + 1)
        f["log2_max_extent"] = max(f["log2_max_extent"], _lg(extent))
        f["tail_loops"] += info.tail
        for ann in loop.annotations:
            key = {"parallel": "parallel_loops", "vector": "vector_loops",
                   "unroll": "unroll_loops"}.get(ann)
            if key:
                f[key] += 1
            elif ann.startswith("gpu."):
                f["gpu_loops"] += 1
                f["gpu_block_loops" if ".block." in ann else "gpu_thread_loops"] += 1
        if "parallel" in loop.annotations and not stack:
            f["parallel_outermost"] += 1
            f["log2_parallel_iters"] = max(f["log2_parallel_iters"], _lg(extent))
        if "vector" in loop.annotations:
            self.vector_extents.append(extent)
        if "unroll" in loop.annotations:
            f["log2_unrolled_iters"] += extent
        self.env[loop.iterator] = lo
        inside = self.walk(loop.body, stack + [info], trips * extent)
        del self.env[loop.iterator]
        info.body_iters = inside
        if info.innermost:
            self.inner_assigns.append(sum(isinstance(s, ir.Assign) for s in loop.body))
        return extent * inside

    def local(self, local: ir.Local, stack: list, trips: float) -> None:
        size = DTYPE_BYTES.get(local.dtype, 4)
        for d in local.dims:
            try:
                size *= max(1, int(_eval(d, self.env)))
            except (KeyError, ValueError, ZeroDivisionError, TypeError):
                pass
        self.dtypes[local.name] = local.dtype
        f = self.f
        f["locals"] += 1
        f["locals_" + (local.space or "default")] += 1
        self.local_bytes.append(size)
        self.local_depths.append(len(stack))
        self.local_allocs += trips
        f["locals_over_l1"] += size > L1_BYTES
        f["locals_over_l2"] += size > L2_BYTES

    def assign(self, stmt: ir.Assign, stack: list, trips: float) -> None:
        f = self.f
        f["assigns"] += 1
        self.assign_depths.append(len(stack))
        self.execs += trips
        reduction = stmt.op != "="
        f["reductions"] += reduction
        ops = 1.0 if reduction else 0.0
        for e in ir.walk_expr(stmt.value):
            if isinstance(e, ir.BinOp) and e.op in ir.ARITH_OPS + ir.COMPARE_OPS:
                ops += 1
                self.divs += trips * (e.op == "/")
            elif isinstance(e, ir.Call):
                ops += 1
                self.trans += trips * (e.func in TRANSCENDENTAL)
            elif isinstance(e, ir.Neg):
                ops += 1
        self.flops += trips * ops
        accesses = [stmt.target] + [e for e in ir.walk_expr(stmt.value) if isinstance(e, ir.Access)]
        for a in accesses:
            nbytes = DTYPE_BYTES.get(self.dtypes.get(a.array, "f32"), 4) * trips
            if a.array in self.globals:
                self.gbytes += nbytes
            else:
                self.lbytes += nbytes
        for depth, info in enumerate(stack):
            for a in accesses:
                info.counts[_stride(a, info.loop.iterator)] += 1
            if reduction and _stride(stmt.target, info.loop.iterator) == "invariant":
                info.carried_reduction = True
        if not stack:
            return
        inner = stack[-1]
        kinds = [_stride(a, inner.loop.iterator) for a in accesses]
        for k in kinds:
            self.acc[k] += trips
        if "vector" in inner.loop.annotations:
            self.vec[0] += sum(k != "strided" for k in kinds)
            self.vec[1] += len(kinds)
        if reduction and kinds[0] == "invariant":
            self.reductions_carried += 1
        footprint = sum(DTYPE_BYTES.get(self.dtypes.get(a.array, "f32"), 4)
                        * (inner.extent if k != "invariant" else 1) for a, k in zip(accesses, kinds))
        self.inner_footprint = max(self.inner_footprint, footprint)
        if len(stack) >= 2:
            outer = stack[-2]
            fp2 = 0
            for a in accesses:
                n = 1
                for info in (outer, inner):
                    if _stride(a, info.loop.iterator) != "invariant":
                        n *= info.extent
                fp2 += n * DTYPE_BYTES.get(self.dtypes.get(a.array, "f32"), 4)
            self.inner2_over = max(self.inner2_over, float(fp2 > L1_BYTES))

    def finish(self) -> np.ndarray:
        f, p = self.f, self.program
        f["mean_assign_depth"] = float(np.mean(self.assign_depths)) if self.assign_depths else 0.0
        f["top_level"] = len(p.body)
        total = sum(self.acc.values()) or 1.0
        f["inner_unit_frac"] = self.acc["unit"] / total
        f["inner_invariant_frac"] = self.acc["invariant"] / total
        f["inner_strided_frac"] = self.acc["strided"] / total
        f["vector_contiguous_frac"] = self.vec[0] / self.vec[1] if self.vec[1] else 0.0
        f["log2_vector_extent"] = _lg(np.mean(self.vector_extents)) if self.vector_extents else 0.0
        f["log2_unrolled_iters"] = _lg(f["log2_unrolled_iters"])
        inner = [i.extent for i in self.loops.values() if i.innermost]
        f["log2_innermost_extent"] = _lg(np.mean(inner)) if inner else 0.0
        f["log2_local_bytes"] = _lg(sum(self.local_bytes))
        f["log2_local_bytes_max"] = _lg(max(self.local_bytes, default=0))
        f["log2_local_allocs"] = _lg(self.local_allocs)
        f["mean_local_depth"] = float(np.mean(self.local_depths)) if self.local_depths else 0.0
        f["log2_flops"] = _lg(self.flops)
        f["log2_transcendentals"] = _lg(self.trans)
        f["log2_divisions"] = _lg(self.divs)
        f["log2_global_access_bytes"] = _lg(self.gbytes)
        f["log2_local_access_bytes"] = _lg(self.lbytes)
        array_bytes = 0
        for a in p.arrays:
            n = DTYPE_BYTES.get(a.dtype, 4)
            for d in a.dims:
                try:
                    n *= max(1, int(_eval(d, p.size_values)))
                except (KeyError, ValueError, ZeroDivisionError, TypeError):
                    pass
            array_bytes += n
        f["log2_array_bytes"] = _lg(array_bytes)
        f["log2_intensity"] = f["log2_flops"] - f["log2_array_bytes"]
        f["log2_executions"] = _lg(self.execs)
        f["inner_assigns_mean"] = float(np.mean(self.inner_assigns)) if self.inner_assigns else 0.0
        f["perfect_depth_max"] = max((_perfect_depth(s) for s in p.body if isinstance(s, ir.Loop)),
                                     default=0)
        first = next((s for s in p.body if isinstance(s, ir.Loop)), None)
        f["log2_outer_extent"] = _lg(self.loops[first.iterator].extent) if first else 0.0
        f["carried_reduction_frac"] = (self.reductions_carried / f["reductions"]
                                       if f["reductions"] else 0.0)
        f["log2_inner_footprint"] = _lg(self.inner_footprint)
        f["inner2_over_l1"] = self.inner2_over
        return np.array([f[name] for name in FEATURE_NAMES], dtype=np.float32)


def _perfect_depth(loop: ir.Loop) -> int:
    depth = 1
    while len(loop.body) == 1 and isinstance(loop.body[0], ir.Loop):
        loop, depth = loop.body[0], depth + 1
    return depth


_CACHE: dict = {}
_CACHE_LIMIT = 512


def analyze(program: ir.Program) -> Analysis:
    """The state features and per-loop facts of a program, cached per program object."""
    hit = _CACHE.get(id(program))
    if hit is not None and hit[0] is program:
        return hit[1]
    walker = _Walker(program)
    walker.walk(program.body, [], 1.0)
    analysis = Analysis(walker.finish(), walker.loops, walker.globals)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[id(program)] = (program, analysis)
    return analysis


def state_features(program: ir.Program) -> np.ndarray:
    """The FEATURE_DIM float32 features of a state (a copy: callers may modify it)."""
    return analyze(program).features.copy()


def action_features(program: ir.Program, action_text: str) -> np.ndarray:
    """The ACTION_DIM float32 features of one step text in this state."""
    a = analyze(program)
    v = dict.fromkeys(ACTION_NAMES, 0.0)
    words = action_text.split()
    if words and words[0] == MACRO_PREFIX:
        words = words[1:]
        _macro_features(v, words)
    kind = words[0] if words else ""
    v[f"kind_{kind}" if kind in KINDS else "kind_other"] = 1.0
    named = [a.loops[w] for w in words[1:] if w in a.loops]
    if named:
        info = named[0]
        counts = info.counts
        total = sum(counts.values()) or 1
        v.update(loop_log2_extent=_lg(info.extent), loop_depth=info.depth,
                 loop_innermost=float(info.innermost), loop_outermost=float(info.depth == 0),
                 loop_unit_frac=counts["unit"] / total,
                 loop_invariant_frac=counts["invariant"] / total,
                 loop_strided_frac=counts["strided"] / total,
                 loop_carried_reduction=float(info.carried_reduction),
                 loop_annotated=float(bool(info.loop.annotations)),
                 loop_log2_body_iters=math.log2(max(1, info.body_iters)), loop_tail=float(info.tail))
    if len(named) > 1:
        v["loop2_log2_extent"] = _lg(named[1].extent)
        v["loop2_innermost"] = float(named[1].innermost)
    if kind == "split" and len(words) >= 4 and words[3].isdigit() and named:
        factor = int(words[3])
        v["log2_factor"] = math.log2(max(1, factor))
        v["factor_divides"] = float(named[0].extent % factor == 0)
        v["log2_factor_ratio"] = math.log2(max(1.0, named[0].extent / max(1, factor)))
    space = next((w for w in words if w in SPACES[1:]), "none")
    v[f"space_{space}"] = 1.0
    v["gpu_block"] = float(any(w.startswith("gpu.block.") for w in words))
    v["gpu_thread"] = float(any(w.startswith("gpu.thread.") for w in words))
    arrays = [a.globals[w] for w in words[1:] if w in a.globals]
    if arrays:
        v["names_global_array"] = 1.0
        v["array_rank"] = len(arrays[0].dims)
    return np.array([v[name] for name in ACTION_NAMES], dtype=np.float32)


def _macro_features(v: dict, words: list) -> None:
    """A macro's label: 'vectorize inner', 'parallelize outer', ... or 'tile A/TA x B/TB x
    R/TR|all [b-outer] [stage X]' (the ``A/TA x`` part absent for a one-dimensional tile)."""
    v["macro"] = 1.0
    sizes = tile_sizes(" ".join(words))
    if not sizes:
        return
    v["macro_tile"] = 1.0
    if len(sizes) == 3:
        v["macro_log2_tile_a"] = _lg(int(sizes[0])) if sizes[0].isdigit() else 0.0
    if len(sizes) >= 2:
        v["macro_log2_tile_b"] = _lg(int(sizes[-2])) if sizes[-2].isdigit() else 0.0
        v["macro_whole_reduction"] = float(sizes[-1] == "all")
    v["macro_b_outer"] = float("b-outer" in words)
    v["macro_stage"] = float("stage" in words)


def action_matrix(program: ir.Program, texts) -> np.ndarray:
    """action_features of every text, stacked: shape (len(texts), ACTION_DIM)."""
    if not texts:
        return np.zeros((0, ACTION_DIM), dtype=np.float32)
    return np.stack([action_features(program, t) for t in texts])

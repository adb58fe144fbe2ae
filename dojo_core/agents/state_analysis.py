"""One walk over a program's IR: the state features and per-loop facts of ``features.py``.

Owns the evaluation of extents and strides and ``analyze(program) -> Analysis``: the
``FEATURE_DIM`` float32 state features (``feature_schema.STATE_FEATURES``) plus, per loop
iterator, a ``LoopInfo`` (depth, extent, innermost, tail, inner iterations, access strides,
carried reduction) and the kernel's arrays by name, which ``action_features`` reads.

Guarantees: deterministic (a pure function of the IR, no randomness, no timing); one walk
per program object (cached by identity, the cache cleared past ``_CACHE_LIMIT`` entries);
extents evaluated at the kernel's sizes with every enclosing iterator at its lower bound (a
``min()`` tail loop counts as its full tile), a bound that cannot be evaluated counting as
1; byte counts naive (every access counted at every iteration, no cache reuse).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import ir
from ..affine import linear
from .feature_schema import FEATURE_NAMES

DTYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "i8": 1}
L1_BYTES, L2_BYTES = 32 * 1024, 1024 * 1024
TRANSCENDENTAL = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "pow")


def log2_1p(x: float) -> float:
    """log2(1 + x), x clamped at 0: zero stays zero."""
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


def stride_kind(access: ir.Access, iterator: str) -> str:
    """'invariant', 'unit' or 'strided' for an access as ``iterator`` advances."""
    coeffs = []
    for index in access.indices:
        try:
            form = linear(index)
            coeffs.append(sum(c for k, c in form.items()
                              if isinstance(k, ir.Var) and k.name == iterator))
            if any(not isinstance(k, (ir.Var, int)) and iterator in ir.var_names(k) for k in form):
                return "strided"
        except Exception:                                               # noqa: BLE001
            return "strided" if iterator in ir.var_names(index) else "invariant"
    if not any(coeffs):
        return "invariant"
    if coeffs[-1] in (1, -1) and not any(coeffs[:-1]):
        return "unit"
    return "strided"


def _bytes(dtype: str, dims, env) -> int:
    """Bytes of a buffer of ``dtype`` and ``dims`` under ``env``; a dimension that does not
    evaluate there counts as 1."""
    size = DTYPE_BYTES.get(dtype, 4)
    for d in dims:
        try:
            size *= max(1, int(_eval(d, env)))
        except (KeyError, ValueError, ZeroDivisionError, TypeError):
            pass
    return size


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
        f["log2_max_extent"] = max(f["log2_max_extent"], log2_1p(extent))
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
            f["log2_parallel_iters"] = max(f["log2_parallel_iters"], log2_1p(extent))
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
        size = _bytes(local.dtype, local.dims, self.env)
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
                info.counts[stride_kind(a, info.loop.iterator)] += 1
            if reduction and stride_kind(stmt.target, info.loop.iterator) == "invariant":
                info.carried_reduction = True
        if not stack:
            return
        inner = stack[-1]
        kinds = [stride_kind(a, inner.loop.iterator) for a in accesses]
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
                    if stride_kind(a, info.loop.iterator) != "invariant":
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
        f["log2_vector_extent"] = log2_1p(np.mean(self.vector_extents)) if self.vector_extents else 0.0
        f["log2_unrolled_iters"] = log2_1p(f["log2_unrolled_iters"])
        inner = [i.extent for i in self.loops.values() if i.innermost]
        f["log2_innermost_extent"] = log2_1p(np.mean(inner)) if inner else 0.0
        f["log2_local_bytes"] = log2_1p(sum(self.local_bytes))
        f["log2_local_bytes_max"] = log2_1p(max(self.local_bytes, default=0))
        f["log2_local_allocs"] = log2_1p(self.local_allocs)
        f["mean_local_depth"] = float(np.mean(self.local_depths)) if self.local_depths else 0.0
        f["log2_flops"] = log2_1p(self.flops)
        f["log2_transcendentals"] = log2_1p(self.trans)
        f["log2_divisions"] = log2_1p(self.divs)
        f["log2_global_access_bytes"] = log2_1p(self.gbytes)
        f["log2_local_access_bytes"] = log2_1p(self.lbytes)
        array_bytes = 0
        for a in p.arrays:
            array_bytes += _bytes(a.dtype, a.dims, p.size_values)
        f["log2_array_bytes"] = log2_1p(array_bytes)
        f["log2_intensity"] = f["log2_flops"] - f["log2_array_bytes"]
        f["log2_executions"] = log2_1p(self.execs)
        f["inner_assigns_mean"] = float(np.mean(self.inner_assigns)) if self.inner_assigns else 0.0
        f["perfect_depth_max"] = max((_perfect_depth(s) for s in p.body if isinstance(s, ir.Loop)),
                                     default=0)
        first = next((s for s in p.body if isinstance(s, ir.Loop)), None)
        f["log2_outer_extent"] = log2_1p(self.loops[first.iterator].extent) if first else 0.0
        f["carried_reduction_frac"] = (self.reductions_carried / f["reductions"]
                                       if f["reductions"] else 0.0)
        f["log2_inner_footprint"] = log2_1p(self.inner_footprint)
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

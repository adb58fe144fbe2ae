"""The analyses behind the CUDA generator (``cuda.py``): the structure of a kernel's block
region, which memory each local of the region lives in, and where barriers are needed.

Nodes of a block region (built by ``cuda_plan.CudaPlan``): ``NLocal`` (a local declared in
the region), ``NSingle`` (statements outside every thread nest: one thread runs them),
``NThread`` (a thread nest: perfectly nested thread loops, the locals between them, the
innermost body), ``NLoop`` (a sequential loop holding thread nests: every thread runs it).

``RegionAnalysis(program, kernel, globals, strided, model)`` decides:

* ``classes[local] = (class, keep)``: ``shared`` (declared ``in shared``), ``perthread``
  (every access lies in thread nests, each dimension indexed either by the iterator of one
  thread axis - the same in every nest, a 0-based loop without block stride - or by no
  thread iterator, and each nest uses exactly those axes: every element belongs to one
  thread; ``keep`` are the dimensions left), ``plain`` (only single-thread parts touch it,
  or the block has one thread) or ``promoted`` (read by several threads: shared memory).
* ``conflict(a, b, equate)``: can an instance of part ``a`` and a later one of part ``b``,
  with equal values of the loops in ``equate``, touch the same element of memory that
  other threads see (global arrays, top-level locals, shared and promoted locals), one of
  them writing it, from two different threads? Decided exactly with islpy on the program's
  polyhedral model (``poly.Model``): thread indices are the thread iterators minus their
  lower bounds (0 on the axes a part does not use, any value under a block stride). A
  quick test on array names comes first.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import islpy as isl

from .. import ir
from ..poly import affine_text, isl_name

AXES = ("x", "y", "z")


def loop_axis(loop, kind):
    """The axis letter of a gpu.<kind>.<axis> annotation of the loop, or None."""
    for a in loop.annotations:
        if a.startswith(f"gpu.{kind}."):
            return a[-1]
    return None


def gpu_annotation(loop):
    return next((a for a in loop.annotations if a.startswith("gpu.")), None)


def contains_gpu(stmt) -> bool:
    return any(isinstance(s, ir.Loop) and gpu_annotation(s) for s in ir.walk_stmts([stmt]))


def vars_in(stmts) -> set:
    """Every Var name used in the statements (bounds, indices, values, dims)."""
    return {n for s in ir.walk_stmts(stmts) for e in ir.stmt_exprs(s, local_dims=True)
            for n in ir.var_names(e)}


def accesses(stmts):
    """(access, is_write) for every access of the statements' assignments."""
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ir.Assign):
            yield s.target, True
            if s.op != "=":
                yield s.target, False
            for e in ir.walk_expr(s.value):
                if isinstance(e, ir.Access):
                    yield e, False


# --------------------------------------------------------------------------- structure

@dataclass
class NLocal:
    """A local declared in a block region (outside thread nests)."""
    local: ir.Local


@dataclass
class NSingle:
    """Statements of a block region outside every thread nest: one thread runs them."""
    stmts: list


@dataclass
class NThread:
    """A thread nest: perfectly nested thread loops, locals between them, innermost body."""
    chain: list
    locals: list
    body: tuple


@dataclass
class NLoop:
    """A sequential loop of a block region that holds thread nests: all threads run it."""
    loop: ir.Loop
    body: list


@dataclass
class GridLoop:
    loop: ir.Loop
    axis: str
    dim: object          # int, or a host C expression (str) for launch-time extents
    guard: bool          # the extent can be below dim: block-uniform `if (i < hi)`
    strided: bool        # grid-stride loop (extent past the grid limit, or unknown in y/z)


@dataclass
class Kernel:
    index: int
    name: str
    root: list                      # the IR statements of the kernel
    grid: list                      # GridLoop, outermost first
    region: list                    # nodes
    serial: bool                    # a single-thread kernel for unbound statements
    host_iters: tuple               # enclosing host-loop iterators
    block: dict = field(default_factory=lambda: {"x": 1, "y": 1, "z": 1})
    params: list = field(default_factory=list)    # buffer names, then host iterators

def walk_nodes(nodes):
    """Every node of a region, those inside NLoop bodies included (parents first)."""
    for n in nodes:
        yield n
        if isinstance(n, NLoop):
            yield from walk_nodes(n.body)


class RegionAnalysis:
    """Memory classes of a kernel's region locals and its barrier test (module docstring)."""

    def __init__(self, program, kernel, globals_, strided, model):
        self.program, self.sizes = program, program.size_values
        self.strided = strided          # loop -> bool: a thread loop with a block stride
        self.model = model              # () -> poly.Model of the program (built lazily)
        self._conflicts = {}
        self._classify(kernel)
        self.sync = self._sync_names(kernel, globals_)
        self._thread_ids(kernel)
    def _classify(self, k):
        """Class of each local of the block region: shared | perthread (keep) | plain."""
        contexts, decls = {}, []
        self.classes = {}
        for n in walk_nodes(k.region):
            if isinstance(n, NLocal):
                decls.append(n.local)
            elif isinstance(n, NSingle):
                for acc, _ in accesses(n.stmts):
                    contexts.setdefault(acc.array, []).append(None)
            elif isinstance(n, NThread):
                axis_of = {l.iterator: loop_axis(l, "thread") for l in n.chain}
                zero = {l.iterator for l in n.chain
                        if l.lo == ir.Const(0) and not self.strided(l)}
                for acc, _ in accesses(n.body):
                    contexts.setdefault(acc.array, []).append((acc, axis_of, zero))
        threads = k.block["x"] * k.block["y"] * k.block["z"]
        for local in decls:
            ctxs = contexts.get(local.name, [])
            if local.space == "shared":
                cls = ("shared", None)
            elif threads == 1 or all(c is None for c in ctxs):
                cls = ("plain", None)
            else:
                keep = self._ownership(ctxs)
                cls = ("perthread", keep) if keep is not None else ("promoted", None)
            self.classes[local.name] = cls

    @staticmethod
    def _ownership(ctxs):
        """The dimensions kept per thread when every access is a thread's own element."""
        mapping = None
        for c in ctxs:
            if c is None:
                return None
            acc, axis_of, zero = c
            m = []
            for e in acc.indices:
                if isinstance(e, ir.Var) and e.name in zero:
                    m.append(axis_of[e.name])
                elif any(isinstance(v, ir.Var) and v.name in axis_of for v in ir.walk_expr(e)):
                    return None
                else:
                    m.append(None)
            owned = [a for a in m if a]
            if len(set(owned)) != len(owned) or set(owned) != set(axis_of.values()):
                return None
            if mapping is None:
                mapping = m
            elif mapping != m:
                return None
        return tuple(i for i, a in enumerate(mapping) if a is None)

    def _sync_names(self, k, globals_) -> set:
        """Names whose memory other threads of the block can see."""
        out = set(globals_)
        out.update(n for n, (c, _) in self.classes.items() if c in ("shared", "promoted"))
        return out

    @staticmethod
    def _segment_stmts(node) -> list:
        if isinstance(node, NSingle):
            return node.stmts
        if isinstance(node, NThread):
            return [node.chain[0]]
        if isinstance(node, NLoop):
            return [node.loop]
        return []

    def _thread_ids(self, k):
        """id(assign) -> {axis: (iterator, lo) or None (strided: any thread)} for every
        assignment of the block region; axes absent from the dict are thread 0."""
        self.tids = {}
        for n in walk_nodes(k.region):
            if isinstance(n, NSingle):
                for a in ir.assignments(n.stmts):
                    self.tids[id(a)] = {}
            elif isinstance(n, NThread):
                tid = {}
                for l in n.chain:
                    strided = self.strided(l)
                    tid[loop_axis(l, "thread")] = None if strided else (l.iterator, l.lo)
                for a in ir.assignments(list(n.body)):
                    self.tids[id(a)] = tid

    def conflict(self, first, second, equate) -> bool:
        """Can an instance of `first` and a later one of `second` (segments of one block
        region; equal values of the loops named in `equate`) touch the same element of
        memory other threads see, one of them writing it, from two different threads?"""
        key = (id(first), id(second), equate)
        if key in self._conflicts:
            return self._conflicts[key]
        sa, sb = self._segment_stmts(first), self._segment_stmts(second)
        touched = {}
        for acc, w in accesses(sa):
            if acc.array in self.sync:
                touched.setdefault(acc.array, [False, False])[0] |= w
        found = False
        for acc, w in accesses(sb):
            if acc.array in touched and (w or touched[acc.array][0]):
                found = True
        if found:
            found = any(self._isl_conflict(s, t, equate)
                        for s in ir.assignments(sa) for t in ir.assignments(sb))
        self._conflicts[key] = found
        return found

    def _isl_conflict(self, s, t, equate) -> bool:
        model = self.model()
        ms, mt = model.statement_of(s), model.statement_of(t)
        pairs = []
        for a, wa in accesses([s]):
            for b, wb in accesses([t]):
                if a.array == b.array and a.array in self.sync and (wa or wb):
                    pairs.append((a, b))
        if not pairs:
            return False
        tid_s, tid_t = self._tid_texts(ms, "_s"), self._tid_texts(mt, "_t")
        differ = []
        for ax in AXES:
            x, y = tid_s[ax], tid_t[ax]
            differ.append("true" if x is None or y is None else f"({x} < {y} or {x} > {y})")
        eq = [f"v_{i}_s = v_{i}_t" for i in equate if i in ms.iterators and i in mt.iterators]
        head = ", ".join([isl_name(i) + "_s" for i in ms.iterators] +
                         [isl_name(i) + "_t" for i in mt.iterators])
        base = [model.domain_text(ms, "_s"), model.domain_text(mt, "_t")] + eq + \
            ["(" + " or ".join(differ) + ")"]
        for a, b in pairs:
            same = [f"{x} = {y}" for x, y in zip(model.index_texts(ms, a, "_s"),
                                                 model.index_texts(mt, b, "_t"))]
            text = "{ [" + head + "] : " + " and ".join(base + same) + " }"
            if not isl.Set(text).is_empty():
                return True
        return False

    def _tid_texts(self, stmt, suffix):
        """ISL text of each axis' thread index of a model statement (None: any)."""
        spec = self.tids.get(id(stmt.assign), {})
        out = {}
        for ax in AXES:
            if ax not in spec:
                out[ax] = "0"
            elif spec[ax] is None:
                out[ax] = None
            else:
                it, lo = spec[ax]
                seen = stmt.iterators[:stmt.iterators.index(it)]
                lo_text = affine_text(lo, self.sizes, seen, allow_minmax=True)
                for i in seen:
                    lo_text = re.sub(rf"\b{isl_name(i)}\b", isl_name(i) + suffix, lo_text)
                out[ax] = f"({isl_name(it)}{suffix} - {lo_text})"
        return out

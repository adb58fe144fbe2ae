"""CUDA code generation (DESIGN.md section 5; TRANSFORMS.md "bind to the GPU grid").

``generate_cuda(program) -> str`` returns one complete ``.cu`` translation unit: the device
kernels, a host entry point

    extern "C" int dojo_run(<one host pointer per in/out/inout array, declaration order>,
                            int reps, float *times_ms)

(allocates, copies in, launches every kernel in program order once, copies the outputs
back, then times ``reps`` further runs with CUDA events into ``times_ms``; returns 0 or the
``cudaError_t`` of the first failing call, never exits; ``dojo_error_string(code)`` names
it), and an ``int main`` behind ``#ifdef DOJO_STANDALONE`` (cuda_host.py). It compiles with
``nvcc -O3 -arch=sm_90`` on a machine without a GPU. ``CudaCodegenError`` (a located
DojoError) explains, in one sentence, a program that has no CUDA translation.

How the IR maps to CUDA
* Barriers: ``__syncthreads()`` goes between two parts of a block region (thread nests,
  single-thread parts, sequential loops holding nests) exactly where an instance of the
  later part can touch an element of memory other threads see (global arrays, shared
  buffers) that an instance of an earlier part since the last barrier touches, one of them
  writing, from a different thread; and at the end of a sequential loop's body (or of a
  grid-stride loop's) when the parts of one iteration conflict so with those of a later
  one (the reuse of a shared tile). Decided exactly on the polyhedral model
  (``cuda_analysis``): sibling nests in which each thread touches its own elements, or
  per-thread data only, get no barrier.
* Locals: ``in shared`` -> ``__shared__`` arrays declared where the IR declares them (inside
  the block loops, outside the thread loops; refused elsewhere with a CudaCodegenError).
  A local of the block region whose every access lies in thread nests, with each
  dimension indexed either by one thread iterator (the same axis in every nest, a 0-based
  loop) or by no thread iterator at all, and the nests using exactly those axes, belongs
  to its thread: the thread dimensions are dropped, one value (or small array) per thread
  (``acc[i1, j1] in register`` -> ``float acc;``). A local only single-thread parts touch is
  a plain local of that thread. Any other local of the block region is read by several
  threads and is placed in ``__shared__`` memory (comment). Locals inside thread nests or
  sequential code are per-thread C arrays; a single-thread kernel keeps locals over 16 KiB
  in global scratch memory. Static shared memory is limited to 48 KiB and local memory to
  512 KiB per thread (CudaCodegenError beyond).
* Loops: ``unroll`` -> ``#pragma unroll``; ``vector``/``parallel`` loops inside kernels
  run sequentially in their thread.
* Dtypes: f32 float, f64 double, i32 int, i64 long long, i8 signed char (computed in int,
  wrapped on store), bf16 float storage rounded to
  bfloat16 (nearest even) on every store (and on entry, like the interpreter); f16 is
  refused. Value semantics: ``cuda_expr``.

The generator trusts the annotations (the transformations add only legal ones): a
hand-written binding of a loop that carries a dependence gives racy code.
"""
from __future__ import annotations

from .. import ir
from ..poly import const_value
from ..transforms.util import extent
from .cuda_analysis import (AXES, Kernel, NLocal, NLoop, NSingle, NThread, RegionAnalysis,
                            accesses, gpu_annotation, loop_axis, vars_in, walk_nodes)
from .c_prefetch import cuda_comment
from .cuda_expr import CTYPES, INT32_MAX, ITEMSIZE, Buffer, CudaCodegenError
from .cuda_plan import CudaPlan

INDENT = "  "
SHARED_LIMIT = 48 * 1024
LOCAL_LIMIT = 512 * 1024        # CUDA's local memory per thread


class CudaGenerator(CudaPlan):
    """Writes the device code of each planned kernel, then the host code (``cuda_host``)."""

    def __init__(self, program: ir.Program):
        super().__init__(program)
        self.lines = []

    # ------------------------------------------------------------------ device code

    def emit(self, depth, text):
        self.lines.append(INDENT * depth + text)

    def _buffers_for(self, k: Kernel):
        bufs = {}
        for name in self.globals:
            d = self.global_decls[name]
            count = 1
            for dim in d.dims:
                count *= const_value(dim, self.sizes)
            kind = "value" if (getattr(d, "kind", None) == "in" and not d.dims) else "flat"
            bufs[name] = Buffer(name, self.names[name], d.dtype, d.dims, kind,
                                wide=count > INT32_MAX)
        return bufs

    def _params(self, k: Kernel):
        used = vars_in(k.root)
        arrays = {acc.array for acc, _ in accesses(k.root)}
        names = [n for n in self.globals if n in arrays]
        iters = [i for i in k.host_iters if i in used]
        k.params = names + iters
        out = []
        for n in names:
            d = self.global_decls[n]
            ctype = CTYPES[d.dtype]
            c = self.names[n]
            if getattr(d, "kind", None) == "in":
                out.append(f"const {ctype} {c}" if not d.dims else f"const {ctype} *__restrict__ {c}")
            else:
                out.append(f"{ctype} *__restrict__ {c}")
        out += [f"const int {self.names[i]}" for i in iters]
        return out

    def _describe(self, k: Kernel) -> str:
        if k.serial:
            return ("not bound to the GPU grid: runs on a single thread, <<<1, 1>>> "
                    "(correct, slow)")
        parts = []
        for g in k.grid:
            dim = g.dim if isinstance(g.dim, int) else "launch-time"
            parts.append(f"{g.loop.iterator} -> blockIdx.{g.axis} ({dim}"
                         f"{', grid-stride' if g.strided else ''})")
        grid = ", ".join(parts) if parts else "one block"
        used = [a for a in AXES if k.block[a] > 1] or ["x"]
        threads = " x ".join(str(k.block[a]) for a in used)
        if threads == "1":
            return f"grid {grid}; block of one thread"
        return f"grid {grid}; block {threads} threads ({', '.join(used)})"

    def _kernel(self, k: Kernel):
        self._block_dims(k)
        self.an = RegionAnalysis(self.program, k, self.globals, lambda l: self._strided(k, l),
                                 self._model)
        self.ex.buffers = self._buffers_for(k)
        self.used = vars_in(k.root)
        self.shared_bytes = 0
        self.local_bytes = 0
        threads = k.block["x"] * k.block["y"] * k.block["z"]
        self.k = k
        roots = ", ".join(f"for {s.iterator}" if isinstance(s, ir.Loop) else "an assignment"
                          for s in k.root[:3]) + (", ..." if len(k.root) > 3 else "")
        self.emit(0, f"/* kernel {k.index} ({roots}): {self._describe(k)} */")
        bounds = f"__launch_bounds__({threads}) " if not k.serial else ""
        self.emit(0, f"__global__ void {bounds}{k.name}({', '.join(self._params(k))})")
        self.emit(0, "{")
        depth = 1
        for g in k.grid:
            it = self.names[g.loop.iterator]
            lo, lp = self.ex.index(g.loop.lo)
            start = f"blockIdx.{g.axis}" if lo == "0" else f"{lo} + blockIdx.{g.axis}"
            hi = self.ex.index(g.loop.hi)[0]
            if g.strided:
                self.emit(depth, f"for (int {it} = {start}; {it} < {hi}; {it} += gridDim.{g.axis}) {{")
                depth += 1
                continue
            if g.loop.iterator in self.used or g.guard:
                self.emit(depth, f"const int {it} = {start};")
            if g.guard:
                self.emit(depth, f"if ({it} < {hi}) {{")
                depth += 1
        pending = []
        self._region_code(k.region, depth, pending)
        if any(g.strided for g in k.grid):
            # a grid-stride loop runs several passes of the region in one block: the shared
            # buffers are reused from one pass to the next
            equate = k.host_iters + tuple(g.loop.iterator for g in k.grid if not g.strided)
            parts = [x for x in walk_nodes(k.region) if isinstance(x, (NSingle, NThread))]
            if any(self.an.conflict(p, x, equate) for p in pending for x in parts):
                self._barrier(depth)
        while depth > 1:
            depth -= 1
            self.emit(depth, "}")
        self.emit(0, "}")
        if self.shared_bytes > SHARED_LIMIT:
            raise CudaCodegenError(f"kernel {k.index} needs {self.shared_bytes} bytes of shared "
                                   f"memory; the static limit is {SHARED_LIMIT}",
                                   k.root[0] if k.root else None)

    def _barrier(self, depth):
        if self.k.block["x"] * self.k.block["y"] * self.k.block["z"] > 1:
            self.emit(depth, "__syncthreads();")
            return True
        return False

    def _region_code(self, nodes, depth, pending, stack=()):
        """Emit the nodes of a block region. pending: the segments since the last barrier
        (updated in place); stack: the iterators of the sequential loops around the region
        (with the grid loops, equal for two instances of one region's pass)."""
        equate = self.k.host_iters + tuple(g.loop.iterator for g in self.k.grid) + stack
        for n in nodes:
            if isinstance(n, NLocal):
                self._region_local(n.local, depth)
                continue
            parts = [n] if not isinstance(n, NLoop) else \
                [x for x in walk_nodes(n.body) if isinstance(x, (NSingle, NThread))]
            if any(self.an.conflict(p, x, equate) for p in pending for x in parts) \
                    and self._barrier(depth):
                pending.clear()
            if isinstance(n, NSingle):
                self._single(n, depth)
                pending.append(n)
            elif isinstance(n, NThread):
                self._thread(n, depth)
                pending.append(n)
            elif isinstance(n, NLoop):
                self._uniform_loop(n, depth, pending, stack)

    def _uniform_loop(self, n: NLoop, depth, pending, stack):
        loop = n.loop
        note = gpu_annotation(loop)
        if note and note.startswith("gpu.block"):
            self.emit(depth, f"/* {note} on '{loop.iterator}' is not on the grid (not perfectly "
                             "nested in the block loops): a sequential loop of each block */")
        elif note:
            self.emit(depth, f"/* {note} on '{loop.iterator}': not mapped (no constant bound), a "
                             "sequential loop of every thread of the block */")
        self._for_header(loop, depth)
        inner = []
        self._region_code(n.body, depth + 1, inner, stack + (loop.iterator,))
        # the parts left without a barrier at the end of one iteration against any part of
        # a later iteration (the equality of the loops inside is not required)
        equate = self.k.host_iters + tuple(g.loop.iterator for g in self.k.grid) + stack
        parts = [x for x in walk_nodes(n.body) if isinstance(x, (NSingle, NThread))]
        if any(self.an.conflict(p, x, equate) for p in inner for x in parts):
            if self._barrier(depth + 1):
                inner = []
        self.emit(depth, "}")
        pending.extend(inner)

    def _for_header(self, loop, depth):
        it = self.names[loop.iterator]
        lo, hi = self.ex.index(loop.lo)[0], self.ex.index(loop.hi)[0]
        if "unroll" in loop.annotations:
            self.emit(depth, "#pragma unroll")
        self.emit(depth, f"for (int {it} = {lo}; {it} < {hi}; {it}++) {{")

    def _region_local(self, local: ir.Local, depth):
        cls, keep = self.an.classes[local.name]
        ctype = CTYPES[local.dtype]
        dims = [const_value(d, self.sizes) for d in local.dims]
        name = self.names[local.name]
        shape = ", ".join(str(d) for d in dims)
        if cls == "perthread":
            kept = [dims[i] for i in keep]
            self.ex.buffers[local.name] = Buffer(local.name, name, local.dtype, local.dims, "md",
                                                 keep)
            self._private(ir.Local(local.name, local.dtype, tuple(local.dims[i] for i in keep)))
            note = ""
            if len(kept) != len(dims):
                note = f"  /* {local.name}[{shape}]: each thread holds its own element" + \
                       ("s" if kept else "") + " */"
            self.emit(depth, f"{ctype} {name}{''.join(f'[{d}]' for d in kept)};{note}")
            return
        self.ex.buffers[local.name] = Buffer(local.name, name, local.dtype, local.dims, "md")
        subs = "".join(f"[{d}]" for d in dims)
        if cls == "plain":
            self._private(local)
            self.emit(depth, f"{ctype} {name}{subs};")
            return
        size = ITEMSIZE[local.dtype]
        for d in dims:
            size *= d
        self.shared_bytes += size
        note = ""
        if cls == "promoted":
            note = f"  /* local {local.name}: several threads use it, so it is shared */"
        self.emit(depth, f"__shared__ {ctype} {name}{subs};{note}")

    def _thread_guard(self):
        conds = [f"threadIdx.{a} == 0" for a in AXES if self.k.block[a] > 1]
        return " && ".join(conds)

    def _single(self, n: NSingle, depth):
        threads = self.k.block["x"] * self.k.block["y"] * self.k.block["z"]
        if threads > 1:
            self.emit(depth, f"if ({self._thread_guard()}) {{")
            self._seq(n.stmts, depth + 1, "single")
            self.emit(depth, "}")
        else:
            self._seq(n.stmts, depth, "single")

    def _thread(self, n: NThread, depth):
        k = self.k
        used_axes = {loop_axis(l, "thread") for l in n.chain}
        body_vars = self._emittedvars_in(list(n.body) + list(n.locals))
        for l in n.chain[1:]:
            body_vars |= vars_in([ir.Loop(l.iterator, l.lo, l.hi)])
        conds = [f"threadIdx.{a} == 0" for a in AXES if k.block[a] > 1 and a not in used_axes]
        self.emit(depth, "{")
        d = depth + 1
        opened = 0
        defs = []

        def flush():
            nonlocal d, opened
            for line in defs:
                self.emit(d, line)
            defs.clear()
            if conds:
                self.emit(d, f"if ({' && '.join(conds)}) {{")
                conds.clear()
                d += 1
                opened += 1
        for l in n.chain:
            a = loop_axis(l, "thread")
            it = self.names[l.iterator]
            lo = self.ex.index(l.lo)[0]
            hi = self.ex.index(l.hi)[0]
            start = f"threadIdx.{a}" if lo == "0" else f"{lo} + threadIdx.{a}"
            if self._strided(k, l):
                flush()
                self.emit(d, f"for (int {it} = {start}; {it} < {hi}; {it} += {k.block[a]}) {{")
                d += 1
                opened += 1
                continue
            exact = extent(l, self.sizes) == k.block[a]
            if not exact:
                conds.append(f"{it} < {hi}")
            if l.iterator in body_vars or not exact:
                defs.append(f"const int {it} = {start};")
        flush()
        for local in n.locals:
            self._plain_local(local, d, "thread")
        self._seq(n.body, d, "thread")
        for _ in range(opened):
            d -= 1
            self.emit(d, "}")
        self.emit(depth, "}")

    def _emittedvars_in(self, stmts) -> set:
        """The Var names the C code of the statements mentions (the dimensions a thread
        drops from its own locals are not written)."""
        out = set()

        def visit(e):
            if isinstance(e, ir.Var):
                out.add(e.name)
            elif isinstance(e, ir.Access):
                buf = self.ex.buffers.get(e.array)
                keep = buf.keep if buf is not None and buf.kind == "md" else range(len(e.indices))
                for k in keep:
                    visit(e.indices[k])
            elif isinstance(e, ir.BinOp):
                visit(e.lhs)
                visit(e.rhs)
            elif isinstance(e, ir.Neg):
                visit(e.operand)
            elif isinstance(e, ir.Call):
                for a in e.args:
                    visit(a)
        for s in ir.walk_stmts(stmts):
            if isinstance(s, ir.Loop):
                visit(s.lo)
                visit(s.hi)
            elif isinstance(s, ir.Assign):
                visit(s.target)
                visit(s.value)
        return out

    # ------------------------------------------------------------------ sequential code

    def _private(self, local):
        """Count a thread-private local against CUDA's local memory per thread."""
        self.local_bytes += self._bytes(local)
        if self.local_bytes > LOCAL_LIMIT:
            raise CudaCodegenError(f"kernel {self.k.index} needs more than {LOCAL_LIMIT} bytes of "
                                   f"local memory per thread (local '{local.name}' and those "
                                   "before it); stage smaller tiles", local)

    def _plain_local(self, local: ir.Local, depth, where):
        if local.name in self.scratch:
            dims = ", ".join(str(const_value(d, self.sizes)) for d in local.dims)
            self.emit(depth, f"/* local {local.name}[{dims}]: global scratch memory (too large "
                             "for a thread's local memory) */")
            return
        if local.space == "shared":
            if where == "thread":
                raise CudaCodegenError(f"local '{local.name}' is in shared memory but sits inside "
                                       "a gpu.thread loop; shared buffers must be declared outside "
                                       "the thread loops", local)
            if self.k.serial:
                raise CudaCodegenError(f"local '{local.name}' is in shared memory but sits outside "
                                       "every gpu.block loop; shared buffers must be declared "
                                       "inside the block loops", local)
        ctype = CTYPES[local.dtype]
        dims = [const_value(d, self.sizes) for d in local.dims]
        subs = "".join(f"[{d}]" for d in dims)
        name = self.names[local.name]
        self.ex.buffers[local.name] = Buffer(local.name, name, local.dtype, local.dims, "md")
        if local.space == "shared":
            size = ITEMSIZE[local.dtype]
            for d in dims:
                size *= d
            self.shared_bytes += size
            self.emit(depth, f"__shared__ {ctype} {name}{subs};")
        else:
            self._private(local)
            self.emit(depth, f"{ctype} {name}{subs};")

    def _seq(self, stmts, depth, where):
        for s in stmts:
            if isinstance(s, ir.Local):
                self._plain_local(s, depth, where)
            elif isinstance(s, ir.Assign):
                self.emit(depth, self.ex.assign(s))
            elif isinstance(s, ir.Loop):
                note = gpu_annotation(s)
                if note and not self.k.serial:
                    self.emit(depth, f"/* {note} on '{s.iterator}': not mapped here (not "
                                     "perfectly nested in the bound loops), sequential */")
                self._for_header(s, depth)
                self._seq(s.body, depth + 1, where)
                self.emit(depth, "}")

    # ------------------------------------------------------------------ whole program

    def generate(self) -> str:
        from . import cuda_host
        device = []
        for k in self.kernels:
            self.lines = []
            self._kernel(k)
            device.append("\n".join(self.lines))
        host = cuda_host.host_code(self)
        return cuda_host.assemble(self, device, host)


def generate_cuda(program: ir.Program) -> str:
    """The CUDA translation unit of a (checked) program; CudaCodegenError when it has none.
    A prefetch (a CPU cache hint) has no GPU code: it is left out of the grid analysis and
    the kernels, and named in one comment line each after the banner (``c_prefetch``)."""
    hints = ir.prefetches(program)
    text = CudaGenerator(ir.without_prefetches(program)).generate()
    if not hints:
        return text
    banner, rest = text.split("\n", 1)
    return "\n".join([banner] + [cuda_comment(h) for h in hints] + [rest])


__all__ = ["generate_cuda", "CudaCodegenError", "CudaGenerator"]

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
* Host level: every top-level loop annotated ``gpu.block.*`` or ``gpu.thread.*`` is one
  ``__global__`` kernel. A top-level loop that is not bound but contains bound loops runs on
  the host, launching the kernels inside it per iteration (its iterators become kernel
  parameters). Other top-level statements (consecutive ones together) become a kernel of a
  single thread, ``<<<1, 1>>>`` (correct, slow), so every program has CUDA code.
  ``temp`` arrays and top-level locals are global device buffers.
* Grid: the block loops perfectly nested from the kernel's root (only ``local``
  declarations between them) are the grid: ``i = lo + blockIdx.y``, grid dimension = the
  loop's (maximal) extent; a tail ``0..min(32, ...)`` gets a block-uniform guard; an extent
  past the grid limit (65535 in y and z) becomes a grid-stride loop. A block loop that is
  not perfectly nested there runs as a sequential loop of each block (its annotation is
  noted in a comment): the blocks of a grid must be independent, which the bind rules prove
  only for the nest.
* Block region (the body of the innermost grid loop): a loop bound to ``gpu.thread.*`` and
  the thread loops perfectly nested in it form a *thread nest*: ``j1 = lo + threadIdx.x``,
  with ``if (j1 < hi)`` where the loop's extent may be below the block dimension (split
  tails; sibling nests of different extents), and ``threadIdx.a == 0`` for the block's axes
  the nest does not use. The block dimension of an axis is the largest constant bound of
  the thread loops bound to it in the kernel (x, y at most 1024, z at most 64, product at
  most 1024; beyond, the nest loops with a block stride). A sequential loop that contains
  thread nests is run by every thread of the block (its bounds are block-uniform).
  Statements outside every thread nest run on one thread (``threadIdx == 0``). Thread
  loops nested below a sequential loop inside a nest run sequentially (comment).
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
from ..affine import sub
from ..poly import Model, const_value
from ..transforms.util import extent, max_extent
from .cuda_analysis import (AXES, GridLoop, Kernel, NLocal, NLoop, NSingle, NThread,
                            RegionAnalysis, accesses, contains_gpu, gpu_annotation, loop_axis,
                            vars_in, walk_nodes)
from .c_prefetch import cuda_comment
from .cuda_expr import (CTYPES, INT32_MAX, ITEMSIZE, Buffer, CudaCodegenError, ExprGen,
                        Helpers, cuda_names)

INDENT = "  "
THREAD_LIMIT = {"x": 1024, "y": 1024, "z": 64}
MAX_THREADS = 1024
GRID_LIMIT = {"x": INT32_MAX, "y": 65535, "z": 65535}
SHARED_LIMIT = 48 * 1024
LOCAL_LIMIT = 512 * 1024        # CUDA's local memory per thread
SCRATCH_BYTES = 16 * 1024       # larger locals of single-thread kernels go to global memory


class CudaGenerator:
    def __init__(self, program: ir.Program):
        self.program = program
        self.sizes = program.size_values
        self.names = cuda_names(program)
        self.helpers = Helpers()
        self.ex = ExprGen(program, self.names, self.helpers)
        self.kernels = []
        self.globals = []           # names of global device buffers: arrays, then top-level locals
        self.global_decls = {}      # name -> ArrayDecl or Local
        self.lines = []
        self._poly = None
        self.scratch = set()        # locals of single-thread kernels placed in global memory
        for decl in program.arrays:
            if decl.dtype == "f16":
                raise CudaCodegenError(f"array '{decl.name}' is f16: the CUDA generator has no "
                                       "__half lowering yet (use f32, or bf16)", decl)
            self.globals.append(decl.name)
            self.global_decls[decl.name] = decl
        for s in ir.walk_stmts(program.body):
            if isinstance(s, ir.Local) and s.dtype == "f16":
                raise CudaCodegenError(f"local '{s.name}' is f16: the CUDA generator has no "
                                       "__half lowering yet (use f32, or bf16)", s)
        self.host = self._host_items(program.body, ())

    # ------------------------------------------------------------------ host plan

    def _host_items(self, body, host_iters):
        items, serial = [], []

        def flush():
            if serial:
                items.append(("kernel", self._serial_kernel(list(serial), host_iters)))
                serial.clear()
        for s in body:
            if isinstance(s, ir.Local):
                if s.space == "shared":
                    raise CudaCodegenError(f"local '{s.name}' is in shared memory but sits outside "
                                           "every gpu.block loop; shared buffers must be declared "
                                           "inside the block loops", s)
                self.globals.append(s.name)
                self.global_decls[s.name] = s
            elif isinstance(s, ir.Loop) and gpu_annotation(s):
                flush()
                items.append(("kernel", self._gpu_kernel(s, host_iters)))
            elif isinstance(s, ir.Loop) and contains_gpu(s):
                flush()
                items.append(("for", s, self._host_items(s.body, host_iters + (s.iterator,))))
            else:
                serial.append(s)
        flush()
        return items

    def _new_kernel(self, root, grid, region, serial, host_iters):
        k = Kernel(len(self.kernels), f"dojo_{self.names.get(self.program.name, self.program.name)}"
                   f"_k{len(self.kernels)}", root, grid, region, serial, host_iters)
        self.kernels.append(k)
        return k

    def _serial_kernel(self, stmts, host_iters):
        for s in ir.walk_stmts(stmts):
            if isinstance(s, ir.Local) and s.space == "shared":
                raise CudaCodegenError(f"local '{s.name}' is in shared memory but sits outside "
                                       "every gpu.block loop; shared buffers must be declared "
                                       "inside the block loops", s)
            if isinstance(s, ir.Local) and self._bytes(s) > SCRATCH_BYTES:
                # the kernel has one thread: a large local can live in global memory
                self.scratch.add(s.name)
                self.globals.append(s.name)
                self.global_decls[s.name] = s
        return self._new_kernel(stmts, [], [NSingle(stmts)], True, host_iters)

    def _gpu_kernel(self, root, host_iters):
        grid, body, prelude, used = [], [root], [], set()
        grid_iters = set()
        while True:
            inner = [s for s in body if not isinstance(s, ir.Local)]
            if len(inner) != 1 or not isinstance(inner[0], ir.Loop):
                break
            loop = inner[0]
            axis = loop_axis(loop, "block")
            if axis is None or axis in used:
                break
            gl = self._grid_loop(loop, axis, grid_iters)
            if gl is None:
                break
            prelude += [s for s in body if isinstance(s, ir.Local)]
            grid.append(gl)
            used.add(axis)
            grid_iters.add(loop.iterator)
            body = loop.body
        region = [NLocal(l) for l in prelude] + self._region(body)
        return self._new_kernel([root], grid, region, False, host_iters)

    def _grid_loop(self, loop, axis, grid_iters):
        bound_vars = vars_in([ir.Loop(loop.iterator, loop.lo, loop.hi)])
        n = extent(loop, self.sizes)
        if n is not None:
            dim, guard = n, False
        elif bound_vars & grid_iters:
            dim, guard = max_extent(loop, self.sizes), True
            if dim is None:
                return None       # depends on outer block iterators without a constant bound
        else:                     # depends on host iterators only: sized at launch
            hi = self.ex.index(sub(loop.hi, loop.lo))[0]
            self.helpers.use("imax")
            return GridLoop(loop, axis, f"dojo_imax(0, {hi})", False, axis != "x")
        strided = dim > GRID_LIMIT[axis]
        return GridLoop(loop, axis, min(dim, GRID_LIMIT[axis]), guard and not strided, strided)

    def _mappable_thread(self, s) -> bool:
        return (isinstance(s, ir.Loop) and loop_axis(s, "thread") is not None
                and max_extent(s, self.sizes) is not None)

    def _holds_threads(self, s) -> bool:
        return any(self._mappable_thread(x) for x in ir.walk_stmts([s]))

    def _region(self, body) -> list:
        nodes, single = [], []

        def flush():
            if single:
                nodes.append(NSingle(list(single)))
                single.clear()
        for s in body:
            if isinstance(s, ir.Local):
                flush()
                nodes.append(NLocal(s))
            elif self._mappable_thread(s):
                flush()
                nodes.append(self._thread_nest(s))
            elif isinstance(s, ir.Loop) and self._holds_threads(s):
                flush()
                nodes.append(NLoop(s, self._region(s.body)))
            else:
                single.append(s)
        flush()
        return nodes

    def _thread_nest(self, loop) -> NThread:
        chain, locals_, cur = [loop], [], loop
        axes = {loop_axis(loop, "thread")}
        while True:
            inner = [s for s in cur.body if not isinstance(s, ir.Local)]
            if len(inner) != 1 or not self._mappable_thread(inner[0]) \
                    or loop_axis(inner[0], "thread") in axes:
                break
            locals_ += [s for s in cur.body if isinstance(s, ir.Local)]
            cur = inner[0]
            chain.append(cur)
            axes.add(loop_axis(cur, "thread"))
        return NThread(chain, locals_, cur.body)

    # ------------------------------------------------------------------ analysis


    def _block_dims(self, k: Kernel):
        dims = {a: 1 for a in AXES}
        for n in walk_nodes(k.region):
            if isinstance(n, NThread):
                for l in n.chain:
                    a = loop_axis(l, "thread")
                    dims[a] = max(dims[a], max_extent(l, self.sizes))
        for a in AXES:
            dims[a] = max(1, min(dims[a], THREAD_LIMIT[a]))
        while dims["x"] * dims["y"] * dims["z"] > MAX_THREADS:
            a = max(AXES, key=lambda a: dims[a])
            dims[a] = (dims[a] + 1) // 2
        k.block = dims

    def _model(self):
        if self._poly is None:
            self._poly = Model(self.program)
        return self._poly

    def _strided(self, k, loop) -> bool:
        return max_extent(loop, self.sizes) > k.block[loop_axis(loop, "thread")]

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

    def _bytes(self, local) -> int:
        size = ITEMSIZE[local.dtype]
        for d in local.dims:
            size *= const_value(d, self.sizes)
        return size

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

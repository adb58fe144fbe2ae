"""The plan of a CUDA translation unit (``cuda.py`` writes its code): which statements
become which kernels, their grids, block regions, thread nests and block dimensions.

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
"""
from __future__ import annotations

from .. import ir
from ..affine import sub
from ..poly import Model, const_value
from ..transforms.util import extent, max_extent
from .cuda_analysis import (AXES, GridLoop, Kernel, NLocal, NLoop, NSingle, NThread,
                            contains_gpu, gpu_annotation, loop_axis, vars_in, walk_nodes)
from .cuda_expr import INT32_MAX, ITEMSIZE, CudaCodegenError, ExprGen, Helpers, cuda_names

THREAD_LIMIT = {"x": 1024, "y": 1024, "z": 64}
MAX_THREADS = 1024
GRID_LIMIT = {"x": INT32_MAX, "y": 65535, "z": 65535}
SCRATCH_BYTES = 16 * 1024       # larger locals of single-thread kernels go to global memory


class CudaPlan:
    """The kernels of a program (``kernels``, ``host``: the host-side items in order) and
    its global device buffers; CudaCodegenError for what has no CUDA translation."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.sizes = program.size_values
        self.names = cuda_names(program)
        self.helpers = Helpers()
        self.ex = ExprGen(program, self.names, self.helpers)
        self.kernels = []
        self.globals = []           # names of global device buffers: arrays, then top-level locals
        self.global_decls = {}      # name -> ArrayDecl or Local
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

    def _bytes(self, local) -> int:
        size = ITEMSIZE[local.dtype]
        for d in local.dims:
            size *= const_value(d, self.sizes)
        return size

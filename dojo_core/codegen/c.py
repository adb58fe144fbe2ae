"""C99 + OpenMP code generation (DESIGN.md section 5).

``generate_c(program, target=None) -> str`` returns one C translation unit defining

    void dojo_kernel(<one restrict pointer per declared array, in declaration order>)

``in`` arrays are ``const``; ``temp`` arrays are parameters too (scratch the caller
allocates, so the kernel allocates nothing on the heap unless a local is too large for the
stack). Arrays are flat, row-major, with the dims of the program's sizes; scalars are
pointers to one element. Sizes are ``const int64_t`` constants of the function; loops are
``for (int64_t i = lo; i < hi; ++i)``; locals are 64-byte aligned arrays in their block
(scalars are plain variables; locals over STACK_LIMIT bytes go to the heap, freed at the end
of their block).

Annotations: ``parallel`` -> an OpenMP parallel region whose threads each call an
outlined ``static`` function on their static share of the iterations; the function holds
the loop itself, and receives the arrays it touches as ``restrict`` parameters, the
enclosing iterators and scalar locals it reads by value (see ``parallel``). gcc keeps what
it knows of the loop there: an inline ``omp parallel for`` hides the arrays' ``restrict``
and made gcc give up vectorizing nests it vectorized without it (PolyBench 2mm, f32
256^3: 8.6 ms untransformed, 68 ms with both outer loops parallel on one thread).
Locals declared inside are private. A parallel loop holding explicit vector code, or one
that writes a scalar local declared outside it, stays an inline ``#pragma omp parallel
for`` (``parallel.outline`` says why). ``unroll`` -> ``#pragma GCC unroll N``, which the
nests that zero, load or store back a tile ``in register`` get too (``moves_register_tile``);
``vector`` -> explicit SIMD with GCC vector types (``c_vector``), or ``#pragma omp simd`` (with reductions through private scalars) when
the loop's accesses are not unit-stride or invariant (streaming stores, past the cache,
into outputs the kernel only writes: a parallel loop holding them becomes ``omp parallel``
+ ``omp for nowait``, each thread fencing its stores, and the kernel fences at its end);
``prefetch`` -> ``__builtin_prefetch`` of each cache line of its box (``c_prefetch``);
``gpu.*`` annotations are ignored
(the loops run sequentially). Value semantics are the interpreter's (``c_expr``).

Annotations are trusted: the transformations only add legal ones; a hand-written
``parallel`` or ``vector`` on a loop that carries a dependence gives wrong results (never
out-of-bounds accesses: every access stays within the iterations the checker proved).
"""
from __future__ import annotations

from math import prod

from .. import ir
from ..errors import Unlocated
from ..poly import const_value
from . import c_vector, parallel, vector_access
from .c_math import streamable_arrays
from .c_prefetch import prefetch_lines
from .origins import Origins
from .c_expr import (CTYPES, ITEMSIZE, MUL, Buffer, ExprGen, Helpers, c_names, context_type,
                     paren, promote)
from .targets import MVEC_FUNCTIONS, Target, get_target

STACK_LIMIT = 256 * 1024          # bytes; larger locals are heap-allocated
ALIGN = 64
INDENT = "  "

_ALLOC = """static inline void *dojo_alloc(size_t bytes)
{
  void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!p) __builtin_trap();
  return p;
}"""


class CodegenError(Unlocated, ValueError):
    """The program cannot be translated to C (e.g. an unsupported dtype); still a ValueError
    for the callers that catch bad input as one."""


class CGenerator:
    def __init__(self, program: ir.Program, target: Target, function_name: str = "dojo_kernel"):
        self.program = program
        self.target = target
        self.function_name = function_name
        self.sizes = program.size_values
        self.helpers = Helpers()
        self.names = c_names(program)
        self.ex = ExprGen(program, self.names, self.helpers)
        self.includes = {"stdint.h", "math.h"}
        self.libm = set()           # scalar libm functions called (for simd declarations)
        self.mvec = {}              # libmvec symbol -> declaration
        self.vector = c_vector.VectorLowering(self)
        self.lines = []
        self.outlined = []          # static functions of parallel loops, callees first
        self.counter = 0
        self._streamable = None     # arrays whose vector stores may stream (streamable)
        self.register_locals = {}   # name -> element count of the locals ``in register``
        self._tile_moves_memo = {}  # id(loop) -> (loop, its _tile_moves)
        self.origins = Origins()    # the statement each line is generated for (line_map)
        self.pieces = []            # the parts of the text, joined by newlines (line_map)

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"dojo_{base}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(self.origins.tag(INDENT * depth + text))

    # ------------------------------------------------------------------ program

    def generate(self) -> str:
        p = self.program
        params = []
        for decl in p.arrays:
            self._check_dtype(decl.dtype, decl)
            cname = self.names[decl.name]
            self.ex.buffers[decl.name] = Buffer(decl.name, cname, decl.dtype, decl.dims, False)
            const = "const " if decl.kind == "in" else ""
            params.append(f"{const}{CTYPES[decl.dtype]} *restrict {cname}")
        body_start = len(self.lines)
        if p.sizes:
            sizes = ", ".join(f"{self.names[n]} = {v}" for n, v in p.sizes)
            self.emit(1, f"const int64_t {sizes};")
        self.block(p.body, 1)
        if self.vector.streams:
            self.emit(1, "dojo_sfence();")
        body = self.lines[body_start:]
        out = [self._banner()]
        out += [f"#include <{h}>" for h in sorted(self.includes)]
        prelude = self._prelude()
        if prelude:
            out += [""] + prelude
        for function in self.outlined:
            out += [""] + function
        out += ["", f"void {self.function_name}({', '.join(params) or 'void'})", "{"]
        out += body
        out += ["}", ""]
        self.pieces = out
        return "\n".join(out)

    def _banner(self) -> str:
        p = self.program
        sizes = ", ".join(f"{n} = {v}" for n, v in p.sizes)
        return (f"/* PerfDojo kernel {p.name}({sizes}), target {self.target.name}: "
                f"void {self.function_name}({', '.join(d.name for d in p.arrays)}) */")

    def _prelude(self) -> list:
        out = []
        decls = []
        for fn in sorted(self.libm):
            if fn in self.target.libmvec:
                nargs = 2 if fn.startswith("pow") else 1
                ctype = "float" if fn.endswith("f") and fn != "erf" else "double"
                args = ", ".join([ctype] * nargs)
                decls.append(f'__attribute__((simd("notinbranch"))) {ctype} {fn}({args});')
        if decls:
            out.append("/* glibc's vector math (libmvec) for the loops gcc vectorizes */")
            out += decls
        out += self.helpers.text()
        out += self.vector.prelude()
        return out

    def streamable(self, name: str) -> bool:
        """True when vector stores into kernel array ``name`` may stream (``c_math``)."""
        if self._streamable is None:
            self._streamable = streamable_arrays(self.program, self.target)
        return name in self._streamable

    def _check_dtype(self, dtype, node):
        if dtype not in CTYPES:
            raise CodegenError(f"unknown dtype {dtype!r}")
        if dtype == "f16" and self.target.arch not in ("x86_64", "aarch64", "riscv64"):
            raise CodegenError(f"f16 (_Float16) is not supported by the C backend on "
                               f"target {self.target.name}")

    # ------------------------------------------------------------------ statements

    def block(self, body, depth: int) -> None:
        heap = []
        for stmt in body:
            with self.origins.of(stmt):
                if isinstance(stmt, ir.Local):
                    self.local(stmt, depth, heap)
                elif isinstance(stmt, ir.Assign):
                    for line in self.assign_lines(stmt):
                        self.emit(depth, line)
                elif isinstance(stmt, ir.Loop):
                    self.loop(stmt, depth)
                elif isinstance(stmt, ir.Prefetch):
                    for line in prefetch_lines(self, stmt, body):
                        self.emit(depth, line)
                else:
                    raise CodegenError(f"unknown statement {stmt!r}")
        for cname in reversed(heap):
            self.emit(depth, f"free({cname});")

    def local(self, stmt: ir.Local, depth: int, heap: list) -> None:
        self._check_dtype(stmt.dtype, stmt)
        cname = self.names[stmt.name]
        ctype = CTYPES[stmt.dtype]
        self.ex.buffers[stmt.name] = Buffer(stmt.name, cname, stmt.dtype, stmt.dims,
                                            not stmt.dims)
        if not stmt.dims:
            self.emit(depth, f"{ctype} {cname};")
            return
        dims = [const_value(d, self.sizes) for d in stmt.dims]
        if None in dims:
            raise CodegenError(f"local {stmt.name} has a dimension that is not constant")
        count = max(1, prod(dims))
        nbytes = count * ITEMSIZE[stmt.dtype]
        if stmt.space == "register":
            self.register_locals[stmt.name] = count
        if nbytes <= STACK_LIMIT:
            self.emit(depth, f"{ctype} {cname}[{count}] __attribute__((aligned({ALIGN})));")
        else:
            self.includes.add("stdlib.h")
            self.helpers.add("0alloc", _ALLOC)
            self.emit(depth, f"{ctype} *restrict {cname} = "
                             f"__builtin_assume_aligned(dojo_alloc({nbytes}), {ALIGN});")
            heap.append(cname)

    def assign_lines(self, stmt: ir.Assign) -> list:
        """C statements of one assignment. C's implicit conversions on assignment and in
        compound assignment are numpy's here (X op e computed in the promoted type, then
        converted to X's type)."""
        buf = self.ex.buffers[stmt.target.array]
        T = context_type(buf.dtype)
        target = self.ex.lvalue(stmt.target)
        code, t, prec = self.ex.value(stmt.value, T)
        self._note_libm(stmt.value, T)
        op = stmt.op
        if op in ("max=", "min="):
            tt = promote(T, t)
            fn = op[:3]
            if tt in ("i32", "i64", "bool"):
                self.helpers.use(fn)
                rhs = f"dojo_{fn}({target}, {code})"
            else:
                self.helpers.use(f"{fn}_{tt}")
                rhs = f"dojo_{fn}_{tt}({target}, {code})"
        elif buf.dtype != "bf16":
            return [f"{target} {op} {code};"]
        elif op == "=":
            rhs = code
        else:
            rhs = f"{target} {op[0]} {paren(code, prec, MUL + 1)}"
        if buf.dtype == "bf16":
            self.helpers.use("round_bf16")
            rhs = f"dojo_round_bf16({rhs})"
        return [f"{target} = {rhs};"]

    def _note_libm(self, expr, T) -> None:
        """Record scalar libm calls that may get simd declarations (f32/f64 contexts)."""
        for node in ir.walk_expr(expr):
            if isinstance(node, ir.Call) and node.func in MVEC_FUNCTIONS and T in ("f32", "f64"):
                self.libm.add(MVEC_FUNCTIONS[node.func][0 if T == "f32" else 1])

    def loop(self, stmt: ir.Loop, depth: int) -> None:
        ann = stmt.annotations
        if "vector" in ann:
            lines = self.vector.lower(stmt)
            if lines is not None:
                for line in lines:
                    self.emit(depth, line)
                return
            self.simd_fallback(stmt, depth)
            return
        start, streams = len(self.lines), self.vector.streams
        if "parallel" in ann:
            if parallel.outline(self, stmt, depth):
                return
            self.emit(depth, "#pragma omp parallel for" + self.omp_schedule(stmt))
        if "unroll" in ann or self.moves_register_tile(stmt):
            n = self.extent(stmt)
            if n is not None:
                self.emit(depth, f"#pragma GCC unroll {max(1, n)}")
        self.emit(depth, self.header(stmt) + " {")
        self.block(stmt.body, depth + 1)
        self.emit(depth, "}")
        if "parallel" in ann and self.vector.streams != streams:
            # streaming stores are weakly ordered: every thread fences its own before the
            # region's closing barrier publishes them
            pad = INDENT * depth
            inner = [INDENT + line for line in self.lines[start + 1:]]
            tag = self.origins.tag
            self.lines[start:] = [tag(pad + "#pragma omp parallel"), tag(pad + "{"),
                                  tag(pad + INDENT + "#pragma omp for" + self.omp_schedule(stmt)
                                      + " nowait")] + inner + \
                                 [tag(pad + INDENT + "dojo_sfence();"), tag(pad + "}")]

    def moves_register_tile(self, stmt: ir.Loop) -> bool:
        """True for a nest without annotations, of constant extents, whose every assignment
        reads or writes a local ``in register`` that the target's vector registers can hold
        whole, and which runs no more assignments than that local has elements: the
        zeroing, loading and storing back of an ``accumulate ... in register`` tile.
        Unrolled whole, its indices into the tile are constants and gcc keeps the tile in
        registers with no copy in memory (left as loops, gcc zeroed a copy with ``rep stos``
        and spilled the registers into it to store the tile back, on every tile). Only on
        targets whose compiler turns the unrolled moves into their vectors (``slp_vectors``).
        """
        if not self.target.slp_vectors:
            return False
        moves = self._tile_moves(stmt)
        if moves is None or not moves[2]:
            return False
        runs, assigns, tiles = moves
        held = min(self.target.vector_registers
                   * self.target.lanes(ITEMSIZE[self.ex.buffers[name].dtype]) for name in tiles)
        tile = max(self.register_locals[name] for name in tiles)
        return tile <= held and runs * assigns <= tile

    def _tile_moves(self, loop: ir.Loop):
        """(product of the nest's extents, its assignments, the register locals they touch)
        for a nest of unannotated, constant-extent loops whose every assignment touches a
        local ``in register``; None for any other nest. Each loop's answer is computed once
        (the loops inside a nest reuse it), its loop kept so that its id stays its own."""
        known = self._tile_moves_memo.get(id(loop))
        if known is not None:
            return known[1]
        n = self.extent(loop)
        moves = None if loop.annotations or n is None else (max(1, n), 0, frozenset())
        for node in loop.body if moves else ():
            if isinstance(node, ir.Loop):
                inner = self._tile_moves(node)
                if inner is None:
                    moves = None
                    break
                moves = (moves[0] * inner[0], moves[1] + inner[1], moves[2] | inner[2])
            elif isinstance(node, ir.Assign):
                touched = {node.target.array} | {e.array for e in ir.walk_expr(node.value)
                                                 if isinstance(e, ir.Access)}
                if not touched & self.register_locals.keys():
                    moves = None
                    break
                moves = (moves[0], moves[1] + 1, moves[2] | (touched & self.register_locals.keys()))
            else:
                moves = None
                break
        self._tile_moves_memo[id(loop)] = (loop, moves)
        return moves

    @staticmethod
    def omp_schedule(stmt) -> str:
        """The schedule clause of an inline parallel loop: round-robin single iterations
        when they do unequal work (``parallel.varying_work``), else OpenMP's default."""
        return " schedule(static, 1)" if parallel.varying_work(stmt) else ""

    def extent(self, stmt):
        lo, hi = const_value(stmt.lo, self.sizes), const_value(stmt.hi, self.sizes)
        return None if lo is None or hi is None else max(0, hi - lo)

    def header(self, stmt, lo=None, hi=None, step=1) -> str:
        it = self.names[stmt.iterator]
        lo = self.ex.index(stmt.lo)[0] if lo is None else lo
        hi = self.ex.index(stmt.hi)[0] if hi is None else hi
        inc = f"++{it}" if step == 1 else f"{it} += {step}"
        return f"for (int64_t {it} = {lo}; {it} < {hi}; {inc})"

    def _gathers(self, loop: ir.Loop) -> bool:
        """True when an access in the loop is neither unit-stride nor invariant in its
        iterator (or its stride is unknown): vectorized, a gather or a scatter."""
        for stmt in ir.walk_stmts(loop.body):
            if not isinstance(stmt, ir.Assign):
                continue
            for access in [stmt.target] + [e for e in ir.walk_expr(stmt.value)
                                            if isinstance(e, ir.Access)]:
                buf = self.ex.buffers.get(access.array)
                if buf is None or vector_access.flat_coef(
                        buf, access.indices, loop.iterator, self.sizes) not in (0, 1):
                    return True
        return False

    def simd_fallback(self, stmt: ir.Loop, depth: int) -> None:
        """``omp simd`` for a vector loop the explicit lowering does not take; reductions
        into loop-invariant elements go through private scalars (``reduction`` clauses).
        A loop with gathers or scatters (``_gathers``) keeps the private scalars but is not
        forced: gcc 12 took minutes to compile an ``omp simd`` gather with a 16 KiB stride
        (gemv's rows, tiled), and decides better by its cost model whether one pays."""
        plan = vector_access.reduction_plan(self, stmt)
        if plan is None:                  # a reduction whose target may vary unpredictably
            self.emit(depth, self.header(stmt) + " {")
            self.block(stmt.body, depth + 1)
            self.emit(depth, "}")
            return
        body = list(stmt.body)
        clauses, pre, post = [], [], []
        for k, assign in plan:
            buf = self.ex.buffers[assign.target.array]
            var = self.fresh("r")
            target = self.ex.lvalue(assign.target)
            pre.append(f"{CTYPES[buf.dtype]} {var} = {target};")
            post.append(f"{target} = {var};")
            self.ex.buffers[var] = Buffer(var, var, buf.dtype, (), True)
            body[k] = ir.Assign(ir.Access(var), assign.op, assign.value)
            self.origins.alias(body[k], assign)
            op = {"+=": "+", "*=": "*", "max=": "max", "min=": "min"}[assign.op]
            clauses.append(f"reduction({op}:{var})")
        if pre:
            self.emit(depth, "{")
            depth += 1
            for line in pre:
                self.emit(depth, line)
        if not self._gathers(stmt):
            self.emit(depth, " ".join(["#pragma omp simd"] + clauses))
        self.emit(depth, self.header(stmt) + " {")
        self.block(tuple(body), depth + 1)
        self.emit(depth, "}")
        if pre:
            for line in post:
                self.emit(depth, line)
            depth -= 1
            self.emit(depth, "}")


def generate_c(program: ir.Program, target=None, function_name: str = "dojo_kernel") -> str:
    """The C translation unit of a (checked) program for a target (a Target, a name of
    ``targets.TARGETS``, or None for this machine's); ``function_name`` names the kernel
    function (the library builder gives each kernel and size its own)."""
    return CGenerator(program, get_target(target), function_name).generate()


__all__ = ["generate_c", "CodegenError", "CGenerator"]

"""Explicit SIMD for ``vector`` loops: GCC vector extensions instead of a hope for the
auto-vectorizer (PERF.md: gcc 12 left an ``omp simd`` register tile scalar).

A ``vector`` loop is lowered when it is innermost with constant bounds, every statement's
context type has one element width (f32/i32 or f64/i64; f16, bf16 and i8 targets are not
lowered), and every access is unit-stride in the loop's iterator (a vector load/store
through ``__builtin_memcpy``, so no alignment is assumed) or invariant in it (a broadcast),
or, where the target's ISA gathers (``Target.vector_gathers``: x86 from AVX2 on), a read of
constant stride in it (one ``vgatherdps``/``vgatherdpd``: a transposing copy such as
attention's staged K^T stores whole vectors instead of one element at a time).
An i8 array read in an i32 or i64 statement is loaded as int8 lanes and widened with
``__builtin_convertvector`` (C's integer promotion: the int8 x int8 -> int32 matmul). Targets
that are invariant must be reductions (``+= *= max= min=``), accumulated in vector registers
and reduced horizontally (a tree of halves) after the loop; up to ``ACCUMULATORS``
independent accumulators per reduction (consecutive vector iterations go to different
ones, so no single dependency chain limits the loop), combined pairwise after it: as many
as the body's own operations do not hide (``body_ops``: a sum of loads gets four, a body
with the inline exp one) and at most half of the target's vector registers in all. The loop
runs in segments of the widest vector that fits the extent (the target's width, then halves
down to 8 bytes, 16 with a reduction), then a scalar remainder: the tail of a 46-wide f32
register tile is 16 + 16 + 8 + 4 + 2 lanes, not two scalar columns (k2mm f32, PolyBench
MEDIUM, one thread: 0.275 -> 0.265 ms). A float division by a loop-invariant value
multiplies by its reciprocal, computed once before the loop (``_div_invariant``). f32
``exp`` is an inline polynomial (``c_math.vexpf_text``, <= 1.35 ulp; AVX-512 1.07 ulp)
unless the target's ``vector_exp`` asks for libmvec; the other exp/log/tanh/erf/pow call
glibc's libmvec vector variants directly where the target has them (``_ZGVeN16v_tanhf``), else a
per-lane loop of the scalar function; ``sqrt`` is a per-lane loop that gcc turns into the
vector instruction. Anything else falls back to ``#pragma omp simd``
(``c.CGenerator.simd_fallback``). An ``=`` store into an output the kernel never reads
is a streaming (non-temporal) store on x86 when the kernel's arrays exceed the target's
last-level cache (``c_math.streamable_arrays``); x86 max/min reductions use the
instructions with a NaN fix-up (a masked move with AVX-512, a blend with AVX or SSE4.1).
A ``prefetch`` of a one-element box in the loop's body (``prefetch X at k ahead i``) asks
for the line of that element at each vector iteration that starts a cache line
(``_prefetch_lines``); a larger box (in IR written by hand: ``vectorize`` refuses it)
falls back.
Measured on Zen 5 (softmax 4096 x 1024, one thread, best repetitions): the inline exp, 4
accumulators and the reciprocal took the ``.steps`` schedule from 11-12 GB/s (libmvec, one
accumulator, division) to about 24 GB/s; with libmvec instead of the inline exp it is 12-15
GB/s. One accumulator instead of four for the max and the sum of the softmax schedule's
fused pass (with the exp), Zen 3 with AVX2 (16 registers: four each spilled the sums),
best of 300 calls, alternating rounds: one thread 2.02-2.04 ms against 2.12-2.15, two
threads 0.95-0.99 against 0.99-1.03.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..poly import const_value
from ..transforms.util import one_element_box
from .c_expr import (CTYPES, ITEMSIZE, MUL, PRIMARY, UNARY, ADD, context_type, int_tree,
                     literal, paren)
from .c_math import IMMINTRIN, SFENCE, can_stream, stream_text
from .c_prefetch import element_prefetch, writes
from .targets import MVEC_FUNCTIONS
from .vector_access import coef, flat_coef, reduction_plan
from .vector_helpers import VectorHelpers


class _NoVector(Exception):
    """The loop is not lowered to vector types (the caller falls back to omp simd)."""


_IDENTITY = {"+=": 0, "*=": 1, "max=": float("-inf"), "min=": float("inf")}
ACCUMULATORS = 4            # independent vector accumulators per reduction (extent allowing)
# Vector operations that must be in flight to hide one accumulator's chain: a combine's
# latency (about four cycles for a floating-point add) times the two vector operations a
# cycle that cores of this class issue. A body of that many operations per vector iteration
# hides its own chain, and further accumulators only take registers from it.
OPS_IN_FLIGHT = 8
# what one vector operation of the body counts as: a function call's inline expansion (the
# polynomial exp: reduction, six FMAs, range test and scaling) or library call, and a
# max/min combine (the NaN fix-up: max, compare, blend)
CALL_OPS = 20
MAXMIN_OPS = 3


def _operations(expr, seen: set) -> int:
    """Vector operations of ``expr`` not already in ``seen`` (the C compiler computes a
    repeated subexpression once; indices are not counted)."""
    if not isinstance(expr, (ir.BinOp, ir.Neg, ir.Call)) or expr in seen:
        return 0
    seen.add(expr)
    if isinstance(expr, ir.BinOp):
        return 1 + _operations(expr.lhs, seen) + _operations(expr.rhs, seen)
    if isinstance(expr, ir.Neg):
        return 1 + _operations(expr.operand, seen)
    own = CALL_OPS if expr.func in MVEC_FUNCTIONS else \
        MAXMIN_OPS if expr.func in ("max", "min") else 1
    return own + sum(_operations(a, seen) for a in expr.args)


def body_ops(loop: ir.Loop) -> int:
    """Vector operations of one vector iteration of ``loop``'s body: the distinct operations
    of its statements' values plus each statement's combine (a store; a reduction, where
    ``max=``/``min=`` cost their NaN fix-up and ``+=`` of a product is one FMA with it)."""
    seen, ops = set(), 0
    for s in loop.body:
        if isinstance(s, ir.Assign):
            ops += _operations(s.value, seen)
            fused = s.op == "+=" and isinstance(s.value, ir.BinOp) and s.value.op == "*"
            ops += MAXMIN_OPS if s.op in ("max=", "min=") else 0 if fused else 1
    return ops


def _nan_masked(stmt, T: str) -> bool:
    """A float max/min reduction: its vector steps (``rmax``/``rmin``) keep a NaN of the
    accumulator but not of the operand, so the lowering ORs the operand's NaN lanes into a
    mask beside each accumulator (``nanmask``) and makes those lanes NaN after the loop (the
    result is NaN when any operand was, as the interpreter's)."""
    return stmt.op in ("max=", "min=") and T.startswith("f")


class VectorLowering(VectorHelpers):
    """Lowers ``vector`` loops to GCC vector types, registering the helpers it uses."""

    def __init__(self, gen):
        super().__init__(gen)
        self.streams = 0            # streaming (non-temporal) stores emitted so far

    # ------------------------------------------------------------------ lowering

    def lower(self, loop: ir.Loop):
        """C lines of the lowered loop, or None (nothing recorded) to fall back."""
        gen = self.gen
        saved = (set(gen.helpers.used), dict(gen.helpers.extra), set(gen.libm),
                 set(self.types), dict(self.helpers), gen.counter, self.streams)
        try:
            return self._lower(loop)
        except _NoVector:
            (gen.helpers.used, gen.helpers.extra, gen.libm, self.types, self.helpers,
             gen.counter, self.streams) = saved
            return None

    def _lower(self, loop):
        gen, sizes, v = self.gen, self.gen.sizes, loop.iterator
        self._hoisted, self._rcp, self._invariants = [], {}, {}
        self._prefetches = [(s, 1 if writes(loop.body, s.array) else 0) for s in loop.body
                            if isinstance(s, ir.Prefetch)]
        assigns = tuple(s for s in loop.body if isinstance(s, ir.Assign))
        if not assigns or len(assigns) + len(self._prefetches) != len(loop.body) \
                or not all(one_element_box(p, sizes) for p, _ in self._prefetches):
            raise _NoVector()
        loop = replace(loop, body=assigns)
        self._written = {s.target.array for s in loop.body}
        lo, hi = const_value(loop.lo, sizes), const_value(loop.hi, sizes)
        if lo is None or hi is None or hi - lo < 2:
            raise _NoVector()
        kinds, widths = [], set()
        reductions = {k for k, _ in (reduction_plan(gen, loop) or [])}
        for k, stmt in enumerate(loop.body):
            buf = gen.ex.buffers[stmt.target.array]
            if buf.dtype in ("f16", "bf16", "i8"):
                raise _NoVector()
            widths.add(ITEMSIZE[buf.dtype])
            c = flat_coef(buf, stmt.target.indices, v, sizes)
            if c == 1:
                kinds.append("store")
            elif c == 0 and k in reductions:
                kinds.append("reduce")
            else:
                raise _NoVector()
        if len(widths) != 1:
            raise _NoVector()
        size = widths.pop()
        lanes, segments, rest = gen.target.vector_bytes // size, [], hi - lo
        while lanes > 1 and lanes * size > rest * size:
            lanes //= 2
        smallest = 16 if "reduce" in kinds else 8
        while lanes * size >= smallest and lanes >= 2:
            if rest // lanes:
                segments.append((lanes, rest // lanes))
                rest -= lanes * (rest // lanes)
            lanes //= 2
        if not segments:
            raise _NoVector()
        it = gen.names[v]
        lines, start = [], lo
        for lanes, count in segments:
            end = start + lanes * count
            lines += self._segment(loop, kinds, lanes, start, end, it)
            start = end
        if start < hi:
            lines.append(f"for (int64_t {it} = {start}; {it} < {hi}; ++{it}) {{")
            for stmt in loop.body:
                lines += ["  " + gen.origins.tag(s, stmt) for s in gen.assign_lines(stmt)]
            lines.append("}")
        if self._hoisted:
            lines = ["{"] + ["  " + h for h in self._hoisted] + ["  " + x for x in lines] + ["}"]
        return lines

    def _segment(self, loop, kinds, lanes, start, end, it):
        """One run of vector iterations [start, end) step lanes. With reductions, the
        iterations go ACCUMULATORS at a time, each into its own vector accumulator (the
        chains are independent), then the remaining iterations into the first; the
        accumulators are combined pairwise after the loop, then reduced across lanes."""
        gen, v = self.gen, loop.iterator
        count = (end - start) // lanes
        nred = kinds.count("reduce")
        # accumulators in all: at most half of the target's vector registers (the body's
        # operands and constants keep the other half)
        budget = gen.target.vector_registers // 2
        # and no more than the body needs to hide the accumulators' chains (a body with the
        # inline exp hides its own: more accumulators only spill the exp's constants)
        hide = 1 << (-(-OPS_IN_FLIGHT // max(1, body_ops(loop))) - 1).bit_length()
        nacc = max(1, min(ACCUMULATORS, hide, count, budget // max(1, nred)))
        reds = []                  # (stmt, T, [accumulators], [NaN masks]) per reduction
        for stmt, kind in zip(loop.body, kinds):
            if kind == "reduce":
                T = context_type(gen.ex.buffers[stmt.target.array].dtype)
                nans = [gen.fresh("nan") for _ in range(nacc)] if _nan_masked(stmt, T) else []
                reds.append((stmt, T, [gen.fresh("acc") for _ in range(nacc)], nans))

        def body(u: int) -> list:
            """The statements of vector iteration it + u * lanes, into accumulators u."""
            sub = {v: ir.BinOp("+", ir.Var(v), ir.Const(u * lanes))} if u else {}
            out, r = self._prefetch_lines(v, u, lanes), 0
            for stmt, kind in zip(loop.body, kinds):
                T = context_type(gen.ex.buffers[stmt.target.array].dtype)
                value = ir.substitute(stmt.value, sub) if sub else stmt.value
                code = self.vector(value, T, lanes, v)
                if kind == "store":
                    target = stmt.target
                    if sub:
                        target = ir.Access(target.array,
                                           tuple(ir.substitute(x, sub) for x in target.indices))
                    ptr = f"&{gen.ex.lvalue(target)}"
                    cur = f"{self._helper('load', T, lanes)}({ptr})"
                    value = self._combine(stmt.op, cur, code, T, lanes)
                    out.append(gen.origins.tag(f"{self._store(stmt, T, lanes)}({ptr}, {value});", stmt))
                elif reds[r][3]:
                    acc, nan = reds[r][2][u], reds[r][3][u]
                    r += 1
                    step, x = self._helper("r" + stmt.op[:3], T, lanes), gen.fresh("x")
                    out.append(gen.origins.tag(
                        f"{{ {self.vt(T, lanes)} {x} = {code[0]}; {acc} = {step}({acc}, {x}); "
                        f"{nan} = dojo_nanor_{T}x{lanes}({nan}, {x}); }}", stmt))
                else:
                    acc = reds[r][2][u]
                    r += 1
                    out.append(gen.origins.tag(f"{acc} = {self._combine(stmt.op, acc, code, T, lanes)};", stmt))
            return out

        def run(lo: int, hi: int, step: int, parts: int, pad: str) -> list:
            n = (hi - lo) // step          # unrolled fully when short (<= 16 vector bodies)
            out = [f"{pad}#pragma GCC unroll {n}"] if 1 < n and n * parts <= 16 else []
            out.append(f"{pad}for (int64_t {it} = {lo}; {it} < {hi}; {it} += {step}) {{")
            for u in range(parts):
                out += [pad + "  " + b for b in body(u)]
            out.append(f"{pad}}}")
            return out

        if not reds:
            return run(start, end, lanes, 1, "")
        lines = ["{"]
        for stmt, T, accs, nans in reds:
            ident = literal(_IDENTITY[stmt.op], T)[0] if T.startswith("f") else \
                {"+=": "0", "*=": "1", "max=": f"INT{8 * ITEMSIZE[T]}_MIN",
                 "min=": f"INT{8 * ITEMSIZE[T]}_MAX"}[stmt.op]
            init = f"{self._helper('splat', T, lanes)}({ident})"
            lines.append(gen.origins.tag(f"  {self.vt(T, lanes)} " + ", ".join(f"{a} = {init}" for a in accs) + ";",
                                         stmt))
            if nans:
                self._helper("nanmask", T, lanes)
                none = f"dojo_nanmask_none_{T}x{lanes}()"
                declared = ", ".join(f"{n} = {none}" for n in nans)
                lines.append(gen.origins.tag(f"  dojo_nanmask_{T}x{lanes} {declared};", stmt))
        mid = start + (count // nacc) * nacc * lanes
        lines += run(start, mid, nacc * lanes, nacc, "  ")
        if mid < end:
            lines += run(mid, end, lanes, 1, "  ")
        for stmt, T, accs, nans in reds:
            for acc, nan in zip(accs, nans):     # a NaN met in a lane makes that lane NaN
                lines.append(gen.origins.tag(f"  {acc} = dojo_nanfix_{T}x{lanes}({nan}, {acc});",
                                             stmt))
            step = 1
            while step < len(accs):             # pairwise: acc0 op= acc1, acc2 op= acc3, ...
                for k in range(0, len(accs) - step, 2 * step):
                    a, b = accs[k], accs[k + step]
                    lines.append(gen.origins.tag(f"  {a} = {self._combine(stmt.op, a, (b, PRIMARY), T, lanes)};",
                                                 stmt))
                step *= 2
            h = {"+=": "hsum", "*=": "hprod", "max=": "hmax", "min=": "hmin"}[stmt.op]
            red = f"{self._helper(h, T, lanes)}({accs[0]})"
            target = gen.ex.lvalue(stmt.target)
            if stmt.op in ("+=", "*="):
                lines.append(gen.origins.tag(f"  {target} {stmt.op} {red};", stmt))
            else:
                lines.append(gen.origins.tag(f"  {target} = {self._scalar(stmt.op[:3], T)}({target}, {red});",
                                             stmt))
        lines.append("}")
        return lines

    def _prefetch_lines(self, v, u: int, lanes: int) -> list:
        """The loop's prefetches (one-element boxes) at vector iteration v + u * lanes: one
        per cache line its lanes span; a vector narrower than a line asks at the iterations
        that start a line in an unrolled group, at every iteration when not unrolled."""
        out = []
        for stmt, rw in self._prefetches:
            size = ITEMSIZE[self.gen.ex.buffers[stmt.array].dtype]
            line = self.gen.target.cache_line_bytes
            span = lanes * size
            offsets = range(0, span, line) if span >= line else \
                ([0] if u == 0 or (u * span) % line == 0 else [])
            for off in offsets:
                shift = u * lanes + off // size
                sub = {v: ir.BinOp("+", ir.Var(v), ir.Const(shift))} if shift else {}
                out.append(self.gen.origins.tag(element_prefetch(self.gen, stmt, rw, sub), stmt))
        return out

    def _store(self, stmt, T, lanes) -> str:
        """The helper that stores a vector of a statement's target: a streaming store
        (``c_math.stream_text``) for an ``=`` into an array the kernel only writes, when
        its arrays exceed the cache (``CGenerator.streamable``), else an ordinary one."""
        buf = self.gen.ex.buffers[stmt.target.array]
        nb = lanes * ITEMSIZE[T]
        if stmt.op != "=" or buf.dtype != T or not can_stream(nb, T) \
                or not self.gen.streamable(stmt.target.array):
            return self._helper("store", T, lanes)
        self.streams += 1
        self.types.add((T, lanes))
        self.need("0immintrin", -1, IMMINTRIN)
        self.need("0sfence", 0, SFENCE)
        name = f"dojo_stream_{T}x{lanes}"
        return self.need(name, 0, stream_text(name, self.vt(T, lanes), CTYPES[T], nb, T))

    def _combine(self, op, cur, item, T, lanes):
        code, prec = item
        if op == "=":
            return code
        if op in ("+=", "*="):
            return f"{cur} {op[0]} {paren(code, prec, (ADD if op == '+=' else MUL) + 1)}"
        return f"{self._helper('v' + op[:3], T, lanes)}({cur}, {code})"

    # ------------------------------------------------------------------ expressions

    def vector(self, expr, T, lanes, v):
        """(code, prec) of a vector of type (T, lanes) holding expr for lanes v..v+lanes-1."""
        return self._as_vector(self._vexpr(expr, T, lanes, v), T, lanes)

    def _as_vector(self, item, T, lanes):
        kind, code, prec = item
        if kind == "v":
            return code, prec
        if kind == "s":
            return f"{self._helper('splat', T, lanes)}({code})", PRIMARY
        raise _NoVector()

    def _vexpr(self, expr, T, lanes, v):
        """('v', code, prec) vector of T; ('s', code, prec) invariant scalar of T;
        ('m', code, prec) lane mask; ('b', code, prec) invariant scalar condition."""
        gen, sizes = self.gen, self.gen.sizes
        names = ir.var_names(expr)
        if v not in names:
            code, t, prec = gen.ex.value(expr, T)
            gen._note_libm(expr, T)
            if t == "bool":
                return "b", code, prec
            if t != T:
                raise _NoVector()
            return ("s",) + self._invariant(expr, code, prec, T)
        it = "i32" if ITEMSIZE[T] == 4 else "i64"
        if int_tree(expr):
            return "v", self._int_lanes(expr, T, lanes, v, it), PRIMARY
        if isinstance(expr, ir.BinOp) and expr.op in ir.COMPARE_OPS \
                and int_tree(expr.lhs) and int_tree(expr.rhs):
            a = self._int_lanes(expr.lhs, it, lanes, v, it)
            b = self._int_lanes(expr.rhs, it, lanes, v, it)
            return "m", f"({a} {expr.op} {b})", PRIMARY
        if isinstance(expr, ir.Access):
            buf = gen.ex.buffers[expr.array]
            c = flat_coef(buf, expr.indices, v, sizes)
            D = context_type(buf.dtype)
            widen = buf.dtype == "i8" and T in ("i32", "i64")    # i8 lanes, promoted
            if self._read_by_gather(c, D, T, lanes):
                return "v", f"{self._helper('gather', D, lanes)}(&{gen.ex.lvalue(expr)}, {c})", \
                    PRIMARY
            if c != 1 or buf.dtype == "f16" or (ITEMSIZE[D] != ITEMSIZE[T] and not widen) \
                    or (buf.dtype == "i8" and not widen):
                raise _NoVector()
            if widen:
                return "v", f"{self._widen(T, lanes)}(&{gen.ex.lvalue(expr)})", PRIMARY
            return "v", f"{self._helper('load', D, lanes)}(&{gen.ex.lvalue(expr)})", PRIMARY
        if isinstance(expr, ir.Neg):
            code, prec = self._as_vector(self._vexpr(expr.operand, T, lanes, v), T, lanes)
            return "v", f"-{paren(code, prec, UNARY + 1)}", UNARY
        if isinstance(expr, ir.BinOp):
            a = self._vexpr(expr.lhs, T, lanes, v)
            b = self._vexpr(expr.rhs, T, lanes, v)
            if expr.op == "/" and T in ("f32", "f64") and a[0] == "v" and b[0] == "s":
                return self._div_invariant(a, b, T, lanes)
            (ac, ap), (bc, bp) = self._as_vector(a, T, lanes), self._as_vector(b, T, lanes)
            op = expr.op
            if op in ir.COMPARE_OPS:
                return "m", f"({ac} {op} {bc})", PRIMARY
            if op in ("//", "%") or (op == "/" and T.startswith("i")):
                raise _NoVector()
            prec = MUL if op in ("*", "/") else ADD
            return "v", f"{paren(ac, ap, prec)} {op} {paren(bc, bp, prec + 1)}", prec
        if isinstance(expr, ir.Call):
            return self._vcall(expr, T, lanes, v, it)
        raise _NoVector()

    def _read_by_gather(self, stride, D: str, T: str, lanes: int) -> bool:
        """Whether an operand of element type D whose flattened index moves by ``stride``
        per lane is read with a gather: a constant stride other than 0 and 1, f32 or f64
        lanes of the statement's type, lane offsets that fit the instruction's 32-bit
        indices, and a target whose ISA gathers (``Target.vector_gathers``)."""
        return (isinstance(stride, int) and stride not in (0, 1) and D == T
                and T in ("f32", "f64") and self.gen.target.vector_gathers
                and abs(stride) * (lanes - 1) < 2 ** 31)

    def _widen(self, T: str, lanes: int) -> str:
        """Name of a helper that loads ``lanes`` int8 values and sign-extends them to T
        lanes: one instruction where the target has it (x86 ``pmovsx`` from SSE4.1 on, NEON
        ``sxtl``), else ``__builtin_convertvector`` of the int8 lanes, which gcc 12
        scalarises for vectors narrower than 16 bytes (about 30 instructions for 8 lanes:
        the int8 matmul's vector loop ran 4x slower than gcc's own vectorisation)."""
        V, nb = self.vt(T, lanes), lanes * ITEMSIZE[T]
        self.types.update({(T, lanes), ("i8", lanes)})
        name = f"dojo_widen_i8_{T}x{lanes}"
        portable = f"__builtin_convertvector({self._helper('load', 'i8', lanes)}(p), {V})"
        bits = 8 * ITEMSIZE[T]
        arch = self.gen.target.arch
        x86 = {16: ("__SSE4_1__", "_mm"), 32: ("__AVX2__", "_mm256"),
               64: ("__AVX512F__", "_mm512")}.get(nb) if arch == "x86_64" else None
        if x86 and lanes in (2, 4, 8, 16):
            self.need("0immintrin", -1, IMMINTRIN)
            guard = x86[0]
            if lanes >= 8:
                low = "_mm_loadu_si128" if lanes == 16 else "_mm_loadl_epi64"
                fast = f"return ({V}){x86[1]}_cvtepi8_epi{bits}({low}((const __m128i *)p));"
            else:
                fast = (f"int32_t w = 0; __builtin_memcpy(&w, p, {lanes}); "
                        f"return ({V}){x86[1]}_cvtepi8_epi{bits}(_mm_cvtsi32_si128(w));")
        elif nb == 16 and T == "i32" and arch == "aarch64":
            self.need("0arm_neon", -1, "#if defined(__ARM_NEON) && !defined(DOJO_PORTABLE)\n"
                                       "#include <arm_neon.h>\n#endif")
            guard = "__ARM_NEON"
            fast = ("int32_t w; __builtin_memcpy(&w, p, 4);\n"
                    f"  return ({V})vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_s32("
                    "vdup_n_s32(w)))));")
        else:
            return self.need(name, 1, f"static inline {V} {name}(const int8_t *p) "
                                      f"{{ return {portable}; }}")
        return self.need(name, 1, f"""static inline {V} {name}(const int8_t *p)
{{
#if defined({guard}) && !defined(DOJO_PORTABLE)
  {fast}
#else
  return {portable};
#endif
}}""")

    def _invariant(self, expr, code, prec, T):
        """(code, prec) of a loop-invariant scalar: a call or a division is computed once,
        into a constant before the loop (gcc keeps e.g. ``1 / sqrtf(var + eps[0])`` in
        the loop, where a square root and a division per vector cost more than the rest of
        a layernorm row), provided it reads no array the loop writes; anything cheaper is
        left in place."""
        costly = any(isinstance(n, ir.Call)
                     or (isinstance(n, ir.BinOp) and n.op in ("/", "//", "%"))
                     for n in ir.walk_expr(expr))
        read = {n.array for n in ir.walk_expr(expr) if isinstance(n, ir.Access)}
        if not costly or read & self._written:
            return code, prec
        if code not in self._invariants:
            name = self.gen.fresh("inv")
            self._hoisted.append(f"const {CTYPES[T]} {name} = {code};")
            self._invariants[code] = name
        return self._invariants[code], PRIMARY

    def _div_invariant(self, a, b, T, lanes):
        """a / s for a vector a and a loop-invariant scalar s: a * (1/s), the reciprocal
        computed once before the loop. That is within an ulp of the quotient (two roundings)
        while 1/s is a normal number; for |s| outside [2^-126, 2^126] (f64: 2^-1022, 2^1022),
        where 1/s would overflow or lose bits, and for 0, inf and NaN, the loop divides (a
        loop-invariant branch that gcc unswitches)."""
        single = T == "f32"
        C = CTYPES[T]
        key = (T, b[1])
        if key not in self._rcp:
            rcp, ok = self.gen.fresh("rcp"), self.gen.fresh("rcpok")
            one, lim, fabs = ("1.0f", "126", "fabsf") if single else ("1.0", "1022", "fabs")
            sfx = "f" if single else ""
            self._hoisted.append(f"const {C} {rcp} = {one} / {paren(b[1], b[2], MUL + 1)};")
            self._hoisted.append(f"const int {ok} = {fabs}({b[1]}) >= 0x1p-{lim}{sfx} && "
                                 f"{fabs}({b[1]}) <= 0x1p{lim}{sfx};")
            self._rcp[key] = (rcp, ok)
        rcp, ok = self._rcp[key]
        ac, ap = self._as_vector(a, T, lanes)
        bc, bp = self._as_vector(b, T, lanes)
        splat = self._helper("splat", T, lanes)
        return ("v", f"({ok} ? {paren(ac, ap, MUL)} * {splat}({rcp}) : "
                     f"{paren(ac, ap, MUL)} / {paren(bc, bp, MUL + 1)})", PRIMARY)

    def _int_lanes(self, expr, T, lanes, v, it):
        """Lanes of an integer expression affine in v, converted to T."""
        c = coef(expr, v, self.gen.sizes)
        if c is None:
            raise _NoVector()
        base = self.gen.ex.index(expr)[0]
        code = f"{self._helper('iota', it, lanes)}({base}, {c})"
        if T != it:
            code = f"__builtin_convertvector({code}, {self.vt(T, lanes)})"
        return code

    def _vcall(self, expr, T, lanes, v, it):
        f = expr.func
        items = [self._vexpr(a, T, lanes, v) for a in expr.args]
        if f == "select":
            c, a, b = items
            (ac, _), (bc, _) = self._as_vector(a, T, lanes), self._as_vector(b, T, lanes)
            if c[0] == "b":
                return "v", f"({c[1]} ? {ac} : {bc})", PRIMARY
            if c[0] == "m":
                mask = c[1]
            else:
                cc, _ = self._as_vector(c, T, lanes)
                mask = f"({cc} != 0)"
            return "v", f"{self._helper('select', T, lanes)}({mask}, {ac}, {bc})", PRIMARY
        args = [self._as_vector(x, T, lanes)[0] for x in items]
        if f in ("max", "min"):
            return "v", f"{self._helper('v' + f, T, lanes)}({args[0]}, {args[1]})", PRIMARY
        if f == "abs":
            return "v", f"{self._helper('vabs', T, lanes)}({args[0]})", PRIMARY
        if T.startswith("i"):
            raise _NoVector()
        single = T == "f32"
        if f in ("sqrt", "rsqrt"):
            code = f"{self._helper('lane_sqrt' + ('f' if single else ''), T, lanes)}({args[0]})"
            if f == "rsqrt":
                one = self._helper("splat", T, lanes) + ("(1.0f)" if single else "(1.0)")
                return "v", f"{one} / {code}", MUL
            return "v", code, PRIMARY
        if f in MVEC_FUNCTIONS:
            cfunc = MVEC_FUNCTIONS[f][0 if single else 1]
            mvec = self.gen.target.libmvec_name(cfunc, lanes * ITEMSIZE[T], len(args))
            if cfunc == "expf" and (self.gen.target.vector_exp == "poly" or not mvec):
                return "v", f"{self._vexpf(lanes)}({args[0]})", PRIMARY
            if mvec:
                V = self.vt(T, lanes)
                self.types.add((T, lanes))
                params = ", ".join([V] * len(args))
                self.need(mvec, 1, f"{V} {mvec}({params});  /* libmvec: {cfunc} on {lanes} lanes */")
                return "v", f"{mvec}({', '.join(args)})", PRIMARY
            return "v", f"{self._helper('lane_' + cfunc, T, lanes)}({', '.join(args)})", PRIMARY
        raise _NoVector()


__all__ = ["VectorLowering"]

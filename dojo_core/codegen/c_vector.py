"""Explicit SIMD for ``vector`` loops: GCC vector extensions instead of a hope for the
auto-vectorizer (PERF.md: gcc 12 left an ``omp simd`` register tile scalar).

A ``vector`` loop is lowered when it is innermost with constant bounds, every statement's
context type has one element width (f32/i32 or f64/i64; f16 and bf16 are not lowered), and
every access is unit-stride in the loop's iterator (a vector load/store through
``__builtin_memcpy``, so no alignment is assumed) or invariant in it (a broadcast). Targets
that are invariant must be reductions (``+= *= max= min=``), accumulated in vector registers
and reduced horizontally after the loop. The loop runs in segments of the widest vector
that fits the extent (the target's width, then halves down to 16 bytes), then a scalar
remainder. exp/log/tanh/erf/pow call glibc's libmvec vector variants directly where the
target has them (``_ZGVeN16v_expf``), else a per-lane loop of the scalar function;
``sqrt`` is a per-lane loop that gcc turns into the vector instruction. Anything else falls
back to ``#pragma omp simd`` (``c.CGenerator.simd_fallback``).
"""
from __future__ import annotations

from .. import ir
from ..poly import const_value
from .c_expr import (CTYPES, ITEMSIZE, MUL, PRIMARY, UNARY, ADD, context_type, int_tree,
                     literal, paren)
from .targets import MVEC_FUNCTIONS


class _NoVector(Exception):
    """The loop is not lowered to vector types (the caller falls back to omp simd)."""


def coef(expr, v: str, sizes: dict):
    """The coefficient of iterator v in an integer expression affine in v (other iterators
    may appear anywhere v does not), or None."""
    if v not in {n.name for n in ir.walk_expr(expr) if isinstance(n, ir.Var)}:
        return 0
    if isinstance(expr, ir.Var):
        return 1
    if isinstance(expr, ir.Neg):
        c = coef(expr.operand, v, sizes)
        return None if c is None else -c
    if isinstance(expr, ir.BinOp) and expr.op in ("+", "-"):
        a, b = coef(expr.lhs, v, sizes), coef(expr.rhs, v, sizes)
        if a is None or b is None:
            return None
        return a + b if expr.op == "+" else a - b
    if isinstance(expr, ir.BinOp) and expr.op == "*":
        for const, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            k = const_value(const, sizes)
            if k is not None:
                c = coef(other, v, sizes)
                return None if c is None else k * c
    return None


def flat_coef(buf, indices, v: str, sizes: dict):
    """The coefficient of v in the flattened (row-major) index of an access, or None."""
    if buf.scalar_var or not indices:
        return 0
    dims = [const_value(d, sizes) for d in buf.dims]
    total, stride = 0, 1
    for k in range(len(indices) - 1, -1, -1):
        c = coef(indices[k], v, sizes)
        if c is None:
            return None
        total += c * stride
        stride *= dims[k] if dims[k] is not None else 0
    return total


def _touched(stmt: ir.Assign) -> list:
    return [stmt.target] + [a for a in ir.walk_expr(stmt.value) if isinstance(a, ir.Access)]


def reduction_plan(gen, loop: ir.Loop):
    """[(position, assign)] of the reductions of a vector loop into elements invariant in
    it; None when a reduction's target cannot be shown invariant or varying, or when an
    invariant target is touched by another statement of the loop."""
    plan = []
    body = loop.body
    for k, stmt in enumerate(body):
        if not isinstance(stmt, ir.Assign):
            return None
        buf = gen.ex.buffers[stmt.target.array]
        c = flat_coef(buf, stmt.target.indices, loop.iterator, gen.sizes)
        if c is None and stmt.op != "=":
            return None
        if c == 0:
            if stmt.op == "=":
                return None
            for j, other in enumerate(body):
                accesses = _touched(other)[1:] if j == k else _touched(other)
                if j != k and any(a.array == stmt.target.array for a in accesses):
                    return None
                if j == k and any(a.array == stmt.target.array for a in accesses):
                    return None
            plan.append((k, stmt))
    return plan


_IDENTITY = {"+=": 0, "*=": 1, "max=": float("-inf"), "min=": float("inf")}


class VectorLowering:
    def __init__(self, gen):
        self.gen = gen
        self.types = set()          # (element dtype, lanes)
        self.helpers = {}           # name -> (order key, text)

    # ------------------------------------------------------------------ prelude

    def prelude(self) -> list:
        out = []
        for t, lanes in sorted(self.types, key=lambda x: (ITEMSIZE[x[0]], x[0], x[1])):
            out.append(f"typedef {CTYPES[t]} {self.vt(t, lanes)} "
                       f"__attribute__((vector_size({lanes * ITEMSIZE[t]})));")
        out += [text for _, text in sorted(self.helpers.values())]
        return out

    def vt(self, t: str, lanes: int) -> str:
        return f"dojo_{t}x{lanes}"

    def need(self, name: str, order: int, text: str) -> str:
        self.helpers.setdefault(name, ((order, name), text))
        return name

    def _helper(self, kind: str, t: str, lanes: int) -> str:
        """Name of a vector helper, its text registered (types too)."""
        V = self.vt(t, lanes)
        it = "i32" if ITEMSIZE[t] == 4 else "i64"
        VI = self.vt(it, lanes)
        self.types.add((t, lanes))
        if kind in ("select", "vabs", "vmax", "vmin"):
            self.types.add((it, lanes))
        C, nb = CTYPES[t], lanes * ITEMSIZE[t]
        name = f"dojo_{kind}_{t}x{lanes}"
        iota = ", ".join(str(k) for k in range(lanes))
        texts = {
            "load": f"static inline {V} {name}(const {C} *p) {{ {V} v; __builtin_memcpy(&v, p, {nb}); return v; }}",
            "store": f"static inline void {name}({C} *p, {V} v) {{ __builtin_memcpy(p, &v, {nb}); }}",
            "splat": f"static inline {V} {name}({C} x) {{ return ({V}){{{', '.join(['x'] * lanes)}}}; }}",
            "iota": f"static inline {V} {name}(int64_t base, int64_t step) {{ return ({V}){{{iota}}} * ({C})step + ({C})base; }}",
            "select": f"static inline {V} {name}({VI} m, {V} a, {V} b) {{ return ({V})(((({VI})a) & m) | ((({VI})b) & ~m)); }}",
        }
        if kind in texts:
            return self.need(name, 0, texts[kind])
        lane_loop = "static inline {R} {n}({V} a) {{ {R} r = {init}; for (int l = 0; l < {L}; ++l) {body}; return r; }}"
        if kind in ("vmax", "vmin"):
            cmp = ">" if kind == "vmax" else "<"
            nan = " | (a != a)" if t.startswith("f") else ""
            return self.need(name, 1, f"static inline {V} {name}({V} a, {V} b) {{ return "
                             f"{self._helper('select', t, lanes)}((a {cmp} b){nan}, a, b); }}")
        if kind == "vabs":
            mask = "0x7fffffff" if ITEMSIZE[t] == 4 else "INT64_C(0x7fffffffffffffff)"
            if t.startswith("i"):
                return self.need(name, 1, f"static inline {V} {name}({V} a) {{ return "
                                 f"{self._helper('select', t, lanes)}(a < 0, -a, a); }}")
            return self.need(name, 1, f"static inline {V} {name}({V} a) {{ return ({V})((({VI})a) & {mask}); }}")
        if kind in ("hsum", "hprod", "hmax", "hmin"):
            if kind in ("hsum", "hprod"):
                body = "r += a[l]" if kind == "hsum" else "r *= a[l]"
            else:
                body = f"r = {self._scalar(kind[1:], t)}(r, a[l])"
            return self.need(name, 2, lane_loop.format(R=C, n=name, V=V, init="a[0]", L=lanes,
                                                       body=body.replace("a[l]", "a[l]"))
                             .replace("int l = 0", "int l = 1"))
        if kind.startswith("lane_"):           # lane_sqrtf, lane_expf, lane_powf ...
            fn = kind[5:]
            if fn.startswith("pow"):
                return self.need(name, 2, f"static inline {V} {name}({V} a, {V} b) {{ {V} r; "
                                 f"for (int l = 0; l < {lanes}; ++l) r[l] = {fn}(a[l], b[l]); return r; }}")
            return self.need(name, 2, lane_loop.format(R=V, n=name, V=V, init="a", L=lanes,
                                                       body=f"r[l] = {fn}(a[l])"))
        raise KeyError(kind)

    def _scalar(self, fn: str, t: str) -> str:
        if t in ("i32", "i64"):
            self.gen.helpers.use(fn)
            return f"dojo_{fn}"
        self.gen.helpers.use(f"{fn}_{t}")
        return f"dojo_{fn}_{t}"

    # ------------------------------------------------------------------ lowering

    def lower(self, loop: ir.Loop):
        """C lines of the lowered loop, or None (nothing recorded) to fall back."""
        gen = self.gen
        saved = (set(gen.helpers.used), dict(gen.helpers.extra), set(gen.libm),
                 set(self.types), dict(self.helpers))
        try:
            return self._lower(loop)
        except _NoVector:
            (gen.helpers.used, gen.helpers.extra, gen.libm, self.types, self.helpers) = saved
            return None

    def _lower(self, loop):
        gen, sizes, v = self.gen, self.gen.sizes, loop.iterator
        if not loop.body or any(not isinstance(s, ir.Assign) for s in loop.body):
            raise _NoVector()
        lo, hi = const_value(loop.lo, sizes), const_value(loop.hi, sizes)
        if lo is None or hi is None or hi - lo < 2:
            raise _NoVector()
        kinds, widths = [], set()
        reductions = {k for k, _ in (reduction_plan(gen, loop) or [])}
        for k, stmt in enumerate(loop.body):
            buf = gen.ex.buffers[stmt.target.array]
            if buf.dtype in ("f16", "bf16"):
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
        while lanes * size >= 16 and lanes >= 2:
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
                lines += ["  " + s for s in gen.assign_lines(stmt)]
            lines.append("}")
        return lines

    def _segment(self, loop, kinds, lanes, start, end, it):
        gen = self.gen
        body, accs, folds = [], [], []
        for stmt, kind in zip(loop.body, kinds):
            buf = gen.ex.buffers[stmt.target.array]
            T = context_type(buf.dtype)
            code = self.vector(stmt.value, T, lanes, loop.iterator)
            target = gen.ex.lvalue(stmt.target)
            if kind == "store":
                ptr = f"&{target}"
                cur = f"{self._helper('load', T, lanes)}({ptr})"
                value = self._combine(stmt.op, cur, code, T, lanes)
                body.append(f"{self._helper('store', T, lanes)}({ptr}, {value});")
            else:
                acc = gen.fresh("acc")
                ident = literal(_IDENTITY[stmt.op], T)[0] if T.startswith("f") else \
                    {"+=": "0", "*=": "1", "max=": f"INT{8 * ITEMSIZE[T]}_MIN",
                     "min=": f"INT{8 * ITEMSIZE[T]}_MAX"}[stmt.op]
                accs.append(f"{self.vt(T, lanes)} {acc} = {self._helper('splat', T, lanes)}({ident});")
                body.append(f"{acc} = {self._combine(stmt.op, acc, code, T, lanes)};")
                h = {"+=": "hsum", "*=": "hprod", "max=": "hmax", "min=": "hmin"}[stmt.op]
                red = f"{self._helper(h, T, lanes)}({acc})"
                if stmt.op in ("+=", "*="):
                    folds.append(f"{target} {stmt.op} {red};")
                else:
                    folds.append(f"{target} = {self._scalar(stmt.op[:3], T)}({target}, {red});")
        lines = []
        pad = "  " if accs else ""
        if accs:
            lines.append("{")
            lines += ["  " + a for a in accs]
        count = (end - start) // lanes
        if 1 < count <= 16:
            lines.append(f"{pad}#pragma GCC unroll {count}")
        lines.append(f"{pad}for (int64_t {it} = {start}; {it} < {end}; {it} += {lanes}) {{")
        lines += [f"{pad}  {b}" for b in body]
        lines.append(f"{pad}}}")
        if accs:
            lines += ["  " + f for f in folds]
            lines.append("}")
        return lines

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
        names = {n.name for n in ir.walk_expr(expr) if isinstance(n, ir.Var)}
        if v not in names:
            code, t, prec = gen.ex.value(expr, T)
            gen._note_libm(expr, T)
            if t == "bool":
                return "b", code, prec
            if t != T:
                raise _NoVector()
            return "s", code, prec
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
            if c != 1 or buf.dtype == "f16" or ITEMSIZE[D] != ITEMSIZE[T]:
                raise _NoVector()
            code = f"{self._helper('load', D, lanes)}(&{gen.ex.lvalue(expr)})"
            if D != T:
                code = f"__builtin_convertvector({code}, {self.vt(T, lanes)})"
            return "v", code, PRIMARY
        if isinstance(expr, ir.Neg):
            code, prec = self._as_vector(self._vexpr(expr.operand, T, lanes, v), T, lanes)
            return "v", f"-{paren(code, prec, UNARY + 1)}", UNARY
        if isinstance(expr, ir.BinOp):
            a = self._vexpr(expr.lhs, T, lanes, v)
            b = self._vexpr(expr.rhs, T, lanes, v)
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
            if mvec:
                V = self.vt(T, lanes)
                self.types.add((T, lanes))
                params = ", ".join([V] * len(args))
                self.need(mvec, 1, f"{V} {mvec}({params});  /* libmvec: {cfunc} on {lanes} lanes */")
                return "v", f"{mvec}({', '.join(args)})", PRIMARY
            return "v", f"{self._helper('lane_' + cfunc, T, lanes)}({', '.join(args)})", PRIMARY
        raise _NoVector()


__all__ = ["VectorLowering", "coef", "flat_coef", "reduction_plan"]

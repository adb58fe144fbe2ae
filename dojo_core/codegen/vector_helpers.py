"""The named C helpers of explicit SIMD code (``c_vector``): vector types, loads and stores
through ``__builtin_memcpy``, splats, selects, NaN-propagating max/min (x86 instructions
with a fix-up where the width has them), horizontal reductions as trees of halves,
per-lane calls and the inline f32 exp. Each is registered once, by name, with a key that
orders the prelude so that a helper comes after those it calls."""
from __future__ import annotations

from .c_expr import CTYPES, ITEMSIZE
from .c_math import IMMINTRIN, vexpf_text


def x86_names(t: str, nb: int) -> tuple:
    """(intrinsic prefix, vector type, suffix) of x86 intrinsics on an nb-byte vector of f32
    or f64: ("_mm256", "__m256d", "pd") for 32 bytes of f64."""
    return ({64: "_mm512", 32: "_mm256", 16: "_mm"}[nb],
            f"__m{8 * nb}" + ("" if t == "f32" else "d"), "ps" if t == "f32" else "pd")


class VectorHelpers:
    """The prelude of a generated file's vector code: the types and helpers used so far."""

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
        if kind in ("select", "vabs", "vmax", "vmin", "rmax", "rmin"):
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
            portable = f"{self._helper('select', t, lanes)}((a {cmp} b){nan}, a, b)"
            if not t.startswith("f") or nb not in (16, 32, 64):
                return self.need(name, 1, f"static inline {V} {name}({V} a, {V} b) {{ return "
                                 f"{portable}; }}")
            # x86 max/min give (a > b ? a : b) / (a < b ? a : b), the second operand for a
            # NaN, so only a NaN in a needs a masked move (AVX-512) or a blend (AVX, SSE4.1):
            # 3 instructions, not 5
            self.need("0immintrin", -1, IMMINTRIN)
            p, m, sfx = x86_names(t, nb)
            isa = "__AVX512F__" if nb == 64 else "__AVX512VL__"
            op = f"{p}_{kind[1:]}_{sfx}(({m})a, ({m})b)"
            blend = ""
            if nb < 64:
                unord = f"_mm256_cmp_{sfx}(({m})a, ({m})a, _CMP_UNORD_Q)" if nb == 32 else \
                    f"_mm_cmpunord_{sfx}(({m})a, ({m})a)"
                blend = (f"#elif defined({'__AVX__' if nb == 32 else '__SSE4_1__'}) && "
                         f"!defined(DOJO_PORTABLE)\n"
                         f"  return ({V}){p}_blendv_{sfx}({op}, ({m})a, {unord});\n")
            return self.need(name, 1, f"""static inline {V} {name}({V} a, {V} b)
{{
#if defined({isa}) && !defined(DOJO_PORTABLE)
  return ({V}){p}_mask_mov_{sfx}({op}, {p}_cmp_{sfx}_mask(({m})a, ({m})a, _CMP_UNORD_Q), ({m})a);
{blend}#else
  return {portable};
#endif
}}""")
        if kind == "nanmask":
            return self._nanmask(name, t, lanes)
        if kind in ("rmax", "rmin"):
            # a reduction's step: (x > acc ? x : acc), x86's max/min with x first, so a NaN
            # in acc stays and a NaN in x is left out (the caller keeps a mask of those):
            # one instruction on the accumulator's chain, where vmax puts three
            cmp = ">" if kind == "rmax" else "<"
            portable = f"{self._helper('select', t, lanes)}(x {cmp} acc, x, acc)"
            text = f"static inline {V} {name}({V} acc, {V} x) {{ return {portable}; }}"
            if t.startswith("f") and nb in (16, 32, 64):
                self.need("0immintrin", -1, IMMINTRIN)
                p, m, sfx = x86_names(t, nb)
                isa = {64: "__AVX512F__", 32: "__AVX__", 16: "__SSE2__"}[nb]
                text = f"""static inline {V} {name}({V} acc, {V} x)
{{
#if defined({isa}) && !defined(DOJO_PORTABLE)
  return ({V}){p}_{kind[1:]}_{sfx}(({m})x, ({m})acc);
#else
  return {portable};
#endif
}}"""
            return self.need(name, 1, text)
        if kind == "gather":
            return self.need(name, 1, self._gather_text(name, t, lanes))
        if kind == "vabs":
            mask = "0x7fffffff" if ITEMSIZE[t] == 4 else "INT64_C(0x7fffffffffffffff)"
            if t.startswith("i"):
                return self.need(name, 1, f"static inline {V} {name}({V} a) {{ return "
                                 f"{self._helper('select', t, lanes)}(a < 0, -a, a); }}")
            return self.need(name, 1, f"static inline {V} {name}({V} a) {{ return ({V})((({VI})a) & {mask}); }}")
        if kind in ("hsum", "hprod", "hmax", "hmin"):
            # a tree: the halves combined lane-wise down to 16 bytes, then those lanes
            # pairwise (orders sort the narrower helpers first: each calls the next)
            order = 2 + lanes / 1024
            if kind in ("hsum", "hprod"):
                op = "+" if kind == "hsum" else "*"
                vcomb = f"h[0] {op} h[1]"

                def scomb(x, y):
                    return f"{x} {op} {y}"
            else:
                vcomb = f"{self._helper('v' + kind[1:], t, lanes // 2)}(h[0], h[1])" \
                    if nb > 16 and lanes > 2 else ""

                def scomb(x, y):
                    return f"{self._scalar(kind[1:], t)}({x}, {y})"
            if nb > 16 and lanes > 2:
                H = self.vt(t, lanes // 2)
                self.types.add((t, lanes // 2))
                inner = self._helper(kind, t, lanes // 2)
                return self.need(name, order, f"static inline {C} {name}({V} a) {{ {H} h[2]; "
                                 f"__builtin_memcpy(h, &a, {nb}); return {inner}({vcomb}); }}")
            terms = [f"a[{k}]" for k in range(lanes)]
            while len(terms) > 1:               # a[0] op a[2], a[1] op a[3], then those
                half = len(terms) // 2
                terms = [scomb(terms[k], terms[k + half]) if k + half < len(terms) else terms[k]
                         for k in range(half)] + terms[2 * half:]
                terms = [f"({x})" if len(terms) > 1 and " " in x and not x.endswith(")") else x
                         for x in terms]
            return self.need(name, order,
                             f"static inline {C} {name}({V} a) {{ return {terms[0]}; }}")
        if kind.startswith("lane_"):           # lane_sqrtf, lane_expf, lane_powf ...
            fn = kind[5:]
            if fn.startswith("pow"):
                return self.need(name, 2, f"static inline {V} {name}({V} a, {V} b) {{ {V} r; "
                                 f"for (int l = 0; l < {lanes}; ++l) r[l] = {fn}(a[l], b[l]); return r; }}")
            return self.need(name, 2, lane_loop.format(R=V, n=name, V=V, init="a", L=lanes,
                                                       body=f"r[l] = {fn}(a[l])"))
        raise KeyError(kind)

    def _gather_text(self, name: str, t: str, lanes: int) -> str:
        """A load of lanes p[0], p[s], ..., p[(lanes - 1) s]: one x86 gather where the width
        has one (AVX2 at 16 and 32 bytes, AVX-512F at 64), else lane by lane. The offsets
        are 32-bit (the caller checks that they fit); with a constant s, gcc folds them."""
        V, C, nb = self.vt(t, lanes), CTYPES[t], lanes * ITEMSIZE[t]
        portable = f"{V} r; for (int l = 0; l < {lanes}; ++l) r[l] = p[l * s]; return r;"
        sfx, scale = ("ps", 4) if t == "f32" else ("pd", 8)
        if nb == 64:
            isa, prefix = "__AVX512F__", "_mm512" if t == "f32" else "_mm256"
        elif nb in (16, 32):
            isa, prefix = "__AVX2__", "_mm256" if t == "f32" and nb == 32 else "_mm"
        else:
            return f"static inline {V} {name}(const {C} *p, int64_t s) {{ {portable} }}"
        self.need("0immintrin", -1, IMMINTRIN)
        idx_lanes = lanes if t == "f32" else max(4, lanes)
        iota = ", ".join(str(k) for k in range(idx_lanes))
        idx = f"{prefix}_mullo_epi32({prefix}_setr_epi32({iota}), {prefix}_set1_epi32((int)s))"
        vec = {16: "_mm", 32: "_mm256", 64: "_mm512"}[nb]
        call = (f"{vec}_i32gather_{sfx}({idx}, p, {scale})" if nb == 64 else
                f"{vec}_i32gather_{sfx}(p, {idx}, {scale})")
        return f"""static inline {V} {name}(const {C} *p, int64_t s)
{{
#if defined({isa}) && !defined(DOJO_PORTABLE)
  return ({V}){call};
#else
  {portable}
#endif
}}"""

    def _nanmask(self, name: str, t: str, lanes: int) -> str:
        """The NaN mask of a float max/min reduction (``c_vector``): the type
        ``dojo_nanmask_TxL``, ``dojo_nanmask_none_TxL()`` (no NaN met yet),
        ``dojo_nanor_TxL(k, x)`` (k with x's NaN lanes marked) and ``dojo_nanfix_TxL(k,
        acc)`` (acc with the marked lanes NaN), one instruction a step: with AVX-512 a mask
        register of the lanes that met no NaN, narrowed by a masked ordered compare of x;
        with AVX or SSE a vector of the lanes that met one, widened by an unordered compare
        of x with that vector (a marked lane, all ones, is a NaN, so it stays marked);
        portable C ORs in x != x."""
        it = "i32" if ITEMSIZE[t] == 4 else "i64"
        V, VI = self.vt(t, lanes), self.vt(it, lanes)
        self.types.add((it, lanes))
        nb = lanes * ITEMSIZE[t]
        select, splat = self._helper("select", t, lanes), self._helper("splat", t, lanes)
        sx = f"{t}x{lanes}"
        vector = f"""typedef {VI} dojo_nanmask_{sx};
static inline {VI} dojo_nanmask_none_{sx}(void) {{ return ({VI}){{0}}; }}
static inline {VI} dojo_nanor_{sx}({VI} k, {V} x) {{ return {{or}}; }}
static inline {V} dojo_nanfix_{sx}({VI} k, {V} acc) {{ return {select}(k, {splat}(NAN), acc); }}"""
        portable = vector.replace("{or}", "k | (x != x)")
        if nb not in (16, 32, 64) or t not in ("f32", "f64"):
            return self.need(name, 1, portable)
        self.need("0immintrin", -1, IMMINTRIN)
        _, m, sfx = x86_names(t, nb)
        if nb == 64:
            km = "__mmask16" if t == "f32" else "__mmask8"
            fast = f"""typedef {km} dojo_nanmask_{sx};
static inline {km} dojo_nanmask_none_{sx}(void) {{ return ({km})-1; }}
static inline {km} dojo_nanor_{sx}({km} k, {V} x) {{ return _mm512_mask_cmp_{sfx}_mask(k, ({m})x, ({m})x, _CMP_ORD_Q); }}
static inline {V} dojo_nanfix_{sx}({km} k, {V} acc) {{ return ({V})_mm512_mask_mov_{sfx}(_mm512_set1_{sfx}(NAN), k, ({m})acc); }}"""
            isa = "__AVX512F__"
        else:
            cmp = f"_mm256_cmp_{sfx}(({m})x, ({m})k, _CMP_UNORD_Q)" if nb == 32 else \
                f"_mm_cmpunord_{sfx}(({m})x, ({m})k)"
            fast = vector.replace("{or}", f"({VI}){cmp}")
            isa = "__AVX__" if nb == 32 else "__SSE2__"
        return self.need(name, 1, f"#if defined({isa}) && !defined(DOJO_PORTABLE)\n{fast}\n"
                                  f"#else\n{portable}\n#endif")

    def _vexpf(self, lanes: int) -> str:
        """Name of the inline vector expf on f32 x lanes (``c_math``), its text registered."""
        V, VI = self.vt("f32", lanes), self.vt("i32", lanes)
        self.types.update({("f32", lanes), ("i32", lanes)})
        name = f"dojo_vexpf_f32x{lanes}"
        text, intrinsics = vexpf_text(name, V, VI, lanes, self._helper("splat", "f32", lanes),
                                      self._helper("select", "f32", lanes))
        if intrinsics:
            self.need("0immintrin", -1, IMMINTRIN)
        return self.need(name, 3, text)

    def _scalar(self, fn: str, t: str) -> str:
        if t in ("i32", "i64"):
            self.gen.helpers.use(fn)
            return f"dojo_{fn}"
        self.gen.helpers.use(f"{fn}_{t}")
        return f"dojo_{fn}_{t}"

"""Vector helpers of the C generator that are x86 intrinsics or long formulas: the inline
vector ``expf`` (``vexpf_text``) and the streaming (non-temporal) store (``stream_text``).

expf on f32 vectors without libm (the f32 ``exp`` of vector loops unless the target asks
for libmvec). x is clamped to [-104, 89] (e^-104 rounds to 0, e^89 overflows; the x86
min/max operand order lets NaN through), reduced to x = n ln2 + r with n = rint(x / ln2),
|r| <= ln2/2, ln2 in two parts (Cody-Waite: ln2_hi has 15 bits, so n * ln2_hi is exact for
|n| <= 150); e^r is 1 + r q(r), q of degree 5 (a degree-6 polynomial for e^r) fitted for
minimal relative error on |r| <= ln2/2 (0.3 * 2^-24 after rounding the coefficients to
float). Then 2^n: with AVX-512 one vscalefps (rounds once, also into the subnormal range,
overflows to inf); elsewhere two normal factors 2^(n>>1) and 2^(n - (n>>1)) built by
integer shifts of n, which sits in the low mantissa bits of z = x / ln2 + 1.5 * 2^23.

On x86 below AVX-512 (16- and 32-byte vectors: SSE2, AVX) a vector whose lanes all lie in
[-86, 86] takes a shorter path first, branch-free within the vector: no clamp, and 2^n
added to the exponent field of 1 + p (one shift of z, one integer add). 2^n and every
intermediate are normal numbers there (|n| <= 124), so scaling by a power of two
commutes with rounding: the result is (1 + p) rounded once, times 2^n exactly, as in the
two-factor path (``fma(p, s1, s1) * s2``), except that with FMA contraction gcc computes
1 + r q(r) in one rounding instead of two (more accurate: 0.952 ulp at most on the sweep
with AVX2, 1.234 on the x86-64 baseline without FMA). A vector with any lane outside (or
NaN) takes the full-range path. The test (|x| against 86: an and, a compare, ``movmskps``)
costs three vector instructions; the clamps and the two-factor scaling it skips cost nine.
The range is symmetric because every instruction counts here: on a Zen 4 core the exp is
bound by how many vectors' dependency chains fit the out-of-order window, and testing
|x - 0.5| <= 86.5 instead (one subtraction more) made softmax 11% slower. Measured on a
Zen 4 core with 256-bit vectors (one run each): the softmax schedule went from 14.2 GB/s
(clamps by compare and select, two-factor scaling, max by compare and select) to 23.3
with this path and the blend-based vector max.

Error (float32 result vs float64 numpy.exp, every float in [-104, 89]; test:
tests/core/test_codegen_c.py, a dense sweep): AVX-512 at most 1.07 ulp (measured 1.061), the
shift path 1.33 ulp with FMA contraction (1.321), 1.35 without (1.345, x86-64 baseline),
for normal results (bounds of the full-range path, which the short one keeps); within one unit of 2^-149 for subnormal results; exactly 0 below
about -103.97 and for -inf, inf above about 88.72 and for inf, NaN for NaN.
"""
from __future__ import annotations

from math import prod

from .. import ir
from ..poly import const_value
from .c_expr import ITEMSIZE

IMMINTRIN = """#if (defined(__x86_64__) || defined(__i386__)) && !defined(DOJO_PORTABLE)
#include <immintrin.h>
#endif"""

_POLY = """r * (0x1p+0f + r * (0x1.fffffcp-2f + r * (0x1.555418p-3f + r * (0x1.555826p-5f
        + r * (0x1.12682ep-7f + r * 0x1.6ae68ep-10f)))))"""

_VEXPF = """/* expf on {lanes} lanes without libm: max error 1.07 ulp with AVX-512, else 1.35 ulp
   (see c_math in PerfDojo's C generator) */
static inline {V} {name}({V} x)
{{
  {V} n, r;
{avx512}  {VI} k, k1;
  {V} z, p, s1, s2;
{fast}  x = {select}(x < {splat}(-104.0f), {splat}(-104.0f), x);
  x = {select}(x > {splat}(89.0f), {splat}(89.0f), x);
  z = x * 0x1.715476p+0f + 0x1.8p+23f;               /* n + 1.5 * 2^23, n = rint(x / ln2) */
  n = z - 0x1.8p+23f;
  r = x - n * 0x1.62e4p-1f - n * 0x1.7f7d1cp-20f;    /* x - n ln2, |r| <= ln2 / 2 */
  p = """ + _POLY + """;                            /* e^r - 1 */
  k = ({VI})z - 0x4b400000;                          /* n */
  k1 = k >> 1;
  s1 = ({V})((k1 + 127) << 23);                      /* 2^(n >> 1) */
  s2 = ({V})((k - k1 + 127) << 23);                  /* 2^(n - (n >> 1)) */
  return (p * s1 + s1) * s2;
{endif}}}"""

_AVX512 = """#if defined({isa}) && !defined(DOJO_PORTABLE)
  x = ({V}){p}_min_ps({p}_set1_ps(89.0f), {p}_max_ps({p}_set1_ps(-104.0f), ({m})x));
  n = ({V}){p}_roundscale_ps(({m})(x * 0x1.715476p+0f), 0);   /* rint(x / ln2) */
  r = x - n * 0x1.62e4p-1f - n * 0x1.7f7d1cp-20f;    /* x - n ln2, |r| <= ln2 / 2 */
  return ({V}){p}_scalef_ps(({m})(0x1p+0f + """ + _POLY + """), ({m})n);       /* e^r 2^n */
#else
"""

# every lane in [-86, 86] (|x| <= 86, false for NaN): 2^n into the exponent of 1 + p
_FAST = """#if defined({isa}) && !defined(DOJO_PORTABLE)
  if (__builtin_expect(!{p}_movemask_ps({cmp}), 1)) {{
    z = x * 0x1.715476p+0f + 0x1.8p+23f;
    n = z - 0x1.8p+23f;
    r = x - n * 0x1.62e4p-1f - n * 0x1.7f7d1cp-20f;
    p = """ + _POLY + """;
    return ({V})(({VI})(p + 0x1p+0f) + (({VI})z << 23));   /* (1 + p) 2^n, |n| <= 124 */
  }}
#endif
"""


def vexpf_text(name: str, V: str, VI: str, lanes: int, splat: str, select: str) -> tuple:
    """(text of the inline expf on f32 x lanes named ``name``, whether it uses immintrin).
    V/VI: the f32 and i32 vector type names; splat/select: helper names."""
    nb = 4 * lanes
    avx512, endif, fast = "", "", ""
    if nb in (16, 32, 64):
        isa = "__AVX512F__" if nb == 64 else "__AVX512VL__"
        prefix = {64: "_mm512", 32: "_mm256", 16: "_mm"}[nb]
        avx512 = _AVX512.format(isa=isa, V=V, p=prefix, m=f"__m{8 * nb}")
        endif = "#endif\n"
    if nb in (16, 32):
        if nb == 32:
            absx = "_mm256_andnot_ps(_mm256_set1_ps(-0.0f), (__m256)x)"
            cmp = f"_mm256_cmp_ps({absx}, _mm256_set1_ps(86.0f), _CMP_NLE_UQ)"
            isa = "__AVX__"
        else:
            absx = "_mm_andnot_ps(_mm_set1_ps(-0.0f), (__m128)x)"
            cmp = f"_mm_cmpnle_ps({absx}, _mm_set1_ps(86.0f))"
            isa = "__SSE2__"
        fast = _FAST.format(isa=isa, p="_mm256" if nb == 32 else "_mm", cmp=cmp, V=V, VI=VI)
    text = _VEXPF.format(name=name, V=V, VI=VI, lanes=lanes, avx512=avx512, endif=endif,
                         fast=fast, splat=splat, select=select)
    return text, nb in (16, 32, 64)


# Non-temporal stores: x86 only, one per vector width and element type
_STREAM = {(64, "f32"): ("_mm512_stream_ps", "float *", "__m512", "__AVX512F__"),
           (64, "f64"): ("_mm512_stream_pd", "double *", "__m512d", "__AVX512F__"),
           (32, "f32"): ("_mm256_stream_ps", "float *", "__m256", "__AVX__"),
           (32, "f64"): ("_mm256_stream_pd", "double *", "__m256d", "__AVX__"),
           (16, "f32"): ("_mm_stream_ps", "float *", "__m128", "__SSE2__"),
           (16, "f64"): ("_mm_stream_pd", "double *", "__m128d", "__SSE2__")}


def can_stream(nbytes: int, t: str) -> bool:
    """True when a streaming store of an nbytes vector of dtype t has a helper."""
    return (nbytes, t) in _STREAM


def stream_text(name: str, V: str, C: str, nbytes: int, t: str) -> str:
    """A streaming store of one vector (``movntps``): the cache line is written without
    being read first and without displacing cached data. It needs an address aligned to
    the vector's width, so an unaligned one (checked at run time; a loop over a row keeps
    one answer) takes an ordinary store. Streaming stores are weakly ordered: the code
    that uses them ends every thread's share and the kernel with ``dojo_sfence``."""
    fn, ptr, m, isa = _STREAM[(nbytes, t)]
    return f"""static inline void {name}({C} *p, {V} v)
{{
#if defined({isa}) && !defined(DOJO_PORTABLE)
  if (!((uintptr_t)p & {nbytes - 1})) {{ {fn}(({ptr})p, ({m})v); return; }}
#endif
  __builtin_memcpy(p, &v, {nbytes});
}}"""


def streamable_arrays(program: ir.Program, target) -> set:
    """The kernel arrays whose vector stores may be streaming stores: on x86, the ``out``
    arrays that no statement reads (no ``=`` of another value, no ``+=``-like update),
    when the kernel's arrays together are at least the target's last-level cache
    (``Target.cache_bytes``; 0, unknown, streams nothing), so that the output could not
    stay cached for whoever reads it next anyway, and caching it would evict the inputs."""
    sizes = program.size_values
    total = 0
    for decl in program.arrays:
        dims = [const_value(d, sizes) for d in decl.dims]
        total += prod(d for d in dims if d is not None) * ITEMSIZE[decl.dtype]
    if target.arch != "x86_64" or not 0 < target.cache_bytes <= total:
        return set()
    read = set()
    for stmt in ir.walk_stmts(program.body):
        if isinstance(stmt, ir.Assign):
            read.update(a.array for a in ir.walk_expr(stmt.value) if isinstance(a, ir.Access))
            if stmt.op != "=":
                read.add(stmt.target.array)
    return {d.name for d in program.arrays if d.kind == "out" and d.name not in read}


SFENCE = """static inline void dojo_sfence(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && !defined(DOJO_PORTABLE)
  _mm_sfence();
#endif
}"""


__all__ = ["IMMINTRIN", "vexpf_text", "can_stream", "stream_text", "streamable_arrays",
           "SFENCE"]

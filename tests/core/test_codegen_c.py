"""The C code generator (DESIGN.md section 5): golden text, compiled results equal to the
interpreter's on every library kernel and on random walks, the explicit vector lowering,
vectorized transcendentals and their accuracy, targets.

Regenerate the golden C (after reviewing the change!) with
pytest tests/core/test_codegen_c.py -k golden --update-goldens.
"""
from __future__ import annotations

import platform
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dojo_core import harness, interp, ir
from dojo_core.codegen import TARGETS, detect_host_target, generate_c
from dojo_core.codegen.c_vector import body_ops
from dojo_core.codegen.targets import target_from_cpuinfo
from dojo_core.compile import find_compiler
from dojo_core.interp.runtime import erf as erf64
from dojo_core.kernels import info, list_kernels, load_kernel, random_inputs
from dojo_core.poly import const_value
from dojo_core.printer import print_program
from dojo_core.source import load_source
from dojo_core.walks import random_walk, replay

from cross_support import require_cross_route
from kernels_text import I8_WRAPPING_STORES, kernel_text, matmul_tile_steps

HOST = detect_host_target()
X86 = platform.machine() == "x86_64"
TEST_OPT = "-O1"          # random walks and the many small kernels compile faster


pytestmark = pytest.mark.usefixtures("module_compile_cache")


def assert_matches_interp(program, reference=None, seed=0, context="", opt=TEST_OPT, threads=1):
    reference = reference or program
    inputs = random_inputs(reference, seed)
    got = harness.run_c(program, inputs, opt=opt, threads=threads)
    want = interp.run(reference, inputs)
    errors = harness.compare(got, want, program)
    assert all(e <= 1 for e in errors.values()), \
        f"{errors} {context}\n{print_program(program)}\n{generate_c(program)}"


# --------------------------------------------------------------------------- golden text

MATMUL_SCHEDULE = "\n".join(matmul_tile_steps(8, 32) + ["stage B at j20 as Bt",
                                                         "parallelize j20"]) + "\n"




def test_golden_matmul_untransformed(golden):
    golden("c/matmul.c", generate_c(load_kernel("matmul"), "x86-avx512"))


def scheduled_matmul(sizes=None):
    program = load_kernel("matmul", sizes or {"N": 64, "M": 64, "K": 48})
    return program, replay(program, MATMUL_SCHEDULE.split("\n")[:-1])


def test_golden_matmul_scheduled(golden):
    _, program = scheduled_matmul()
    text = generate_c(program, "x86-avx512")
    golden("c/matmul_scheduled.c", text)
    assert "dojo_f32x16" in text and "#pragma omp parallel for" in text
    assert "#pragma GCC unroll 8" in text and "float acc[256] __attribute__((aligned(64)));" in text


def test_scheduled_matmul_runs_and_matches():
    original, program = scheduled_matmul()
    assert_matches_interp(program, original, opt=None, threads=2)


# --------------------------------------------------------------------------- library kernels

@pytest.mark.parametrize("name", list_kernels())
def test_library_kernel_matches_interpreter(name):
    for sizes in (info(name).test_sizes, info(name).alt_sizes):
        assert_matches_interp(load_kernel(name, sizes), context=f"{name} at {dict(sizes)}")


@pytest.mark.parametrize("name", list_kernels())
def test_random_walks_compiled(name):
    """The compiled half of the property tests: random legal steps keep the outputs."""
    original = load_kernel(name, info(name).test_sizes)
    for seed in (0, 1):
        texts, final = random_walk(original, 8, seed)
        assert_matches_interp(final, original, seed, f"after {texts} (seed {seed})")


CODEGEN_KINDS = ("split", "interchange", "fission", "vectorize", "parallelize", "unroll", "stage",
                 "accumulate", "layout", "prefetch")


@pytest.mark.parametrize("name", list_kernels())
def test_codegen_biased_random_walk(name):
    """A walk drawn from the moves the C generator lowers specially (vector, parallel,
    unroll, locals), so that every kernel exercises them."""
    original = load_kernel(name, info(name).test_sizes)
    texts, final = random_walk(original, 10, 2, kinds=CODEGEN_KINDS)
    assert_matches_interp(final, original, 2, f"after {texts} (seed 2)")


# --------------------------------------------------------------------------- vector lowering

VEC = kernel_text("vec(N = 3, M = 37)",
                  "in X: f32[N, M]; in b: f32[M]; out Y: f32[N, M]; out s: f32[N]; "
                  "out m: f32[N]", """\
for i in 0..N:
  s[i] = 0
  m[i] = -inf
  for j in 0..M vector:
    Y[i, j] = select(j < 20, exp(X[i, j]) * b[j], max(X[i, j], 0.5) - j) + X[i, 0]
    s[i] += X[i, j] * X[i, j]
    m[i] max= abs(X[i, j] - 0.25)
""")


def test_vector_loop_uses_vector_types_and_remainder():
    program = load_source(VEC)
    text = generate_c(program, "x86-avx512")
    assert "typedef float dojo_f32x16 __attribute__((vector_size(64)));" in text
    # 37 = 2 x 16 (two vector iterations, each reduction into one accumulator: the body
    # with the exp hides the chains by itself) + 1 x 4 + 1 scalar iteration
    assert "for (int64_t j = 0; j < 32; j += 16)" in text
    assert "dojo_acc1 = dojo_acc1 + dojo_acc2;" not in text
    assert "for (int64_t j = 32; j < 36; j += 4)" in text
    assert "for (int64_t j = 36; j < 37; ++j)" in text
    assert "dojo_vexpf_f32x16" in text and "_ZGV" not in text
    assert "dojo_hsum_f32x16" in text and "omp simd" not in text
    for seed in range(3):
        assert_matches_interp(program, seed=seed, opt=None)
    libmvec = replace(TARGETS["x86-avx512"], vector_exp="libmvec")
    assert "_ZGVeN16v_expf" in generate_c(program, libmvec)
    if "expf" in HOST.libmvec:
        inputs = random_inputs(program, 0)
        got = harness.run_c(program, inputs, target=replace(HOST, vector_exp="libmvec"))
        errors = harness.compare(got, interp.run(program, inputs), program)
        assert all(e <= 1 for e in errors.values()), errors


REDUCE = """\
kernel red(N = 4, M = 179)
in  X: f32[N, M]
in  Z: i32[N, M]
out s: f32[N]
out m: f32[N]
out n: f32[N]
out p: f32[N]
out z: i32[N]
out w: i32[N]

for i in 0..N:
  s[i] = 0
  m[i] = -inf
  n[i] = inf
  p[i] = 1
  z[i] = 0
  w[i] = 1
  for j in 0..M vector:
    s[i] += X[i, j] * 0.5
  for a in 0..M vector:
    m[i] max= X[i, a]
  for b in 0..M vector:
    n[i] min= X[i, b] - b
  for c in 0..M vector:
    p[i] *= 1 + X[i, c] * 0.001
  for k in 0..M vector:
    z[i] += Z[i, k] * 3
    w[i] max= Z[i, k] - k
"""


THREE_SUMS = """\
kernel three(N = 4, M = 256)
in  X: f32[N, M]
in  Y: f32[N, M]
in  Z: f32[N, M]
out s: f32[N]
out t: f32[N]
out u: f32[N]

for i in 0..N:
  s[i] = 0
  t[i] = 0
  u[i] = 0
  for j in 0..M vector:
    s[i] += X[i, j]
    t[i] += Y[i, j]
    u[i] += Z[i, j]
"""


@pytest.mark.parametrize("target,per_reduction", [("x86-avx512", 4), ("arm-neon", 4),
                                                  ("riscv-rvv", 4), ("x86-avx2", 2)])
def test_vector_accumulators_take_half_of_the_targets_registers(target, per_reduction):
    """Three sums in one vector loop (a body of three additions: too short to hide a chain)
    share half of the target's vector registers as accumulators: four each where there are
    32 registers (AVX-512, NEON, RVV), two each with AVX2's 16."""
    text = generate_c(load_source(THREE_SUMS), target)
    assert len(set(re.findall(r"\bdojo_acc\d+\b", text))) == 3 * per_reduction


@pytest.mark.parametrize("body,ops,accumulators", [
    ("s[i] += X[i, j]", 1, 4),
    ("s[i] += X[i, j] * X[i, j] - 1", 3, 4),
    ("s[i] += (X[i, j] - 1) * (X[i, j] - 1)", 2, 4),
    ("s[i] += X[i, j] - 1\n    m[i] max= X[i, j] - 1", 5, 4),   # two for each reduction
    ("m[i] max= X[i, j] * 2", 4, 2),
    ("s[i] += exp(X[i, j] - m[i])", 22, 1),
])
def test_a_reduction_gets_the_accumulators_its_body_does_not_hide(body, ops, accumulators):
    """Each accumulator's chain needs OPS_IN_FLIGHT vector operations beside it: a short
    body gets four accumulators, a longer one two, one with the inline exp (softmax's sum
    of exponentials) one, whose registers the exp's constants keep (with AVX2's 16, four
    accumulators each for the max and the sum of softmax's fused pass spilled them)."""
    program = load_source(kernel_text("acc(N = 4, M = 256)",
                                      "in X: f32[N, M]; out s: f32[N]; out m: f32[N]", f"""\
for i in 0..N:
  s[i] = 0
  m[i] = 0
  for j in 0..M vector:
    {body}
"""))
    loop = next(x for x in ir.walk_stmts(program.body)
                if isinstance(x, ir.Loop) and x.iterator == "j")
    assert body_ops(loop) == ops
    for target in ("x86-avx512", "x86-avx2"):
        text = generate_c(program, target)
        assert len(set(re.findall(r"\bdojo_acc\d+\b", text))) == accumulators, target
    assert_matches_interp(program, seed=0, opt=None)


def test_vector_reductions_use_independent_accumulators():
    """179 = 11 x 16 (two trips of 4 iterations into 4 accumulators, then 3 into the first
    ones) + 3 lanes of the scalar remainder; NaN still propagates through max/min (four
    accumulators for max, two for min: its body, a subtraction and the NaN fix-up, hides
    more of its own chain; the NaN masks of max and min)."""
    program = load_source(REDUCE)
    text = generate_c(program, "x86-avx512")
    assert "for (int64_t j = 0; j < 128; j += 64)" in text
    assert "for (int64_t j = 128; j < 176; j += 16)" in text
    for a in range(1, 5):
        assert f"dojo_acc{a} = dojo_splat_f32x16(0.0f)" in text
    assert len(re.findall(r"dojo_acc\d+ = dojo_splat_f32x16\(-INFINITY\)", text)) == 4
    assert len(re.findall(r"dojo_acc\d+ = dojo_splat_f32x16\(INFINITY\)", text)) == 2
    assert "dojo_acc1 = dojo_acc1 + dojo_acc2;" in text and "dojo_acc3 = dojo_acc3 + dojo_acc4;" \
        in text and "dojo_acc1 = dojo_acc1 + dojo_acc3;" in text
    assert "dojo_i32x16" in text and "INT32_MIN" in text
    # a max/min step puts one instruction on the accumulator's chain; the operand's NaN
    # lanes go into a mask beside it, made NaN after the loop
    assert len(set(re.findall(r"(dojo_acc\d+) = dojo_rmax_f32x16\(dojo_acc\d+, dojo_x\d+\); "
                              r"(dojo_nan\d+) = dojo_nanor_f32x16\(\2, dojo_x\d+\);", text))) == 4
    assert "_mm512_max_ps((__m512)x, (__m512)acc)" in text
    # one instruction a step: with AVX-512 a masked ordered compare narrows a mask register
    # of the lanes that met no NaN; below it an unordered compare of x with the mask itself
    assert "_mm512_mask_cmp_ps_mask(k, (__m512)x, (__m512)x, _CMP_ORD_Q)" in text
    assert "return (dojo_i32x8)_mm256_cmp_ps((__m256)x, (__m256)k, _CMP_UNORD_Q);" in \
        generate_c(program, "x86-avx2")
    for seed in range(2):
        assert_matches_interp(program, seed=seed, opt=None)
    inputs = random_inputs(program, 5)
    x = inputs["X"].copy()
    x[0, 3] = np.nan           # main loop, first accumulator
    x[1, 50] = np.nan          # main loop, last accumulator
    x[2, 140] = np.nan         # after the main loop
    x[3, 177] = np.nan         # scalar remainder
    inputs["X"] = x
    want = interp.run(program, inputs)
    portable = replace(HOST, cflags=HOST.cflags + ("-DDOJO_PORTABLE",))   # no intrinsics
    avx2 = (TARGETS["x86-avx2"],) if HOST_AVX2 else ()          # max/min through blendv
    for target in (HOST, portable) + avx2:
        got = harness.run_c(program, inputs, target=target, opt=TEST_OPT)
        for name in ("s", "m", "n", "p"):
            assert np.all(np.isnan(got[name])), (name, got[name])
        errors = harness.compare(got, want, program)
        assert all(e <= 1 for e in errors.values()), errors


REDUCE_F64 = kernel_text("red64(N = 3, M = 37)", "in X: f64[N, M]; out m: f64[N]; out n: f64[N]",
                         """\
for i in 0..N:
  m[i] = -inf
  n[i] = inf
  for j in 0..M vector:
    m[i] max= X[i, j]
    n[i] min= X[i, j]
""")


@pytest.mark.skipif(HOST.name not in ("x86-avx512", "x86-avx2"),
                    reason="this host cannot run x86-avx2 code")
def test_f64_max_min_reductions_keep_a_nan_in_their_masks():
    """f64 lanes take the pd compares (a mask register with AVX-512, a vector with AVX2); a
    NaN in the first, a middle and the scalar remainder's lanes makes its row's max and min
    NaN, and rows without one are exact."""
    program = load_source(REDUCE_F64)
    assert "return (dojo_i64x4)_mm256_cmp_pd((__m256d)x, (__m256d)k, _CMP_UNORD_Q);" in \
        generate_c(program, "x86-avx2")
    assert "_mm512_mask_cmp_pd_mask(k, (__m512d)x, (__m512d)x, _CMP_ORD_Q)" in \
        generate_c(program, "x86-avx512")
    inputs = random_inputs(program, 3)
    x = inputs["X"].copy()
    x[0, 0], x[1, 17], x[2, 36] = np.nan, np.nan, np.nan
    inputs["X"] = x
    clean = random_inputs(program, 4)
    for target in {HOST.name: HOST, "x86-avx2": TARGETS["x86-avx2"]}.values():
        got = harness.run_c(program, inputs, target=target, opt=TEST_OPT)
        assert all(np.isnan(got["m"])) and all(np.isnan(got["n"])), (target.name, got)
        got = harness.run_c(program, clean, target=target, opt=TEST_OPT)
        assert np.array_equal(got["m"], clean["X"].max(axis=1)), target.name
        assert np.array_equal(got["n"], clean["X"].min(axis=1)), target.name


DIVIDE = kernel_text("div(N = 12, M = 40)",
                     "in X: f32[N, M]; in d: f32[N]; in D: f64[N, M]; in e: f64[N]; "
                     "out Y: f32[N, M]; out W: f64[N, M]", """\
for i in 0..N:
  for j in 0..M vector:
    Y[i, j] = X[i, j] / d[i]
  for k in 0..M vector:
    W[i, k] = D[i, k] / (e[i] * 2)
""")


def test_division_by_loop_invariant_uses_the_reciprocal():
    """x / s in a vector loop is x * (1/s) with 1/s computed once, within an ulp of the
    quotient; divisors whose reciprocal is not a normal number (tiny, huge, 0, inf, NaN)
    divide, bit for bit."""
    program = load_source(DIVIDE)
    text = generate_c(program, "x86-avx512")
    assert "const float dojo_rcp1 = 1.0f / d[i];" in text
    assert "fabsf(d[i]) >= 0x1p-126f && fabsf(d[i]) <= 0x1p126f" in text
    assert "* dojo_splat_f32x16(dojo_rcp1)" in text and "1.0 / (e[i] * 2.0)" in text
    inputs = random_inputs(program, 0)
    specials = [1e-39, -3e-39, 3e38, -1e38, 0.0, -0.0, np.inf, np.nan, 2.0**-126, 2.0**126]
    d = inputs["d"].copy()
    d[:len(specials)] = specials
    e = inputs["e"].copy()
    e[:4] = [1e-310, 1e308, 0.0, np.nan]
    x = inputs["X"].copy()
    x[:, 0] = 0.0
    x[:, 1] = np.inf
    x[:, 2] = 1e-30
    inputs.update(d=d, e=e, X=x)
    got = harness.run_c(program, inputs, opt=TEST_OPT)
    with np.errstate(all="ignore"):
        want_y = x / d[:, None]
        want_w = inputs["D"] / (e[:, None] * 2)
        e2 = e * 2
    for g, w, div in ((got["Y"], want_y, d), (got["W"], want_w, e2)):
        exact = ~((np.abs(div) >= np.finfo(div.dtype).tiny) &
                  (np.abs(div) <= 2.0 ** (126 if div.dtype == np.float32 else 1022)))
        np.testing.assert_array_equal(g[exact], w[exact])
        ok = ~exact
        np.testing.assert_array_equal(np.isfinite(g[ok]), np.isfinite(w[ok]))
        fin = np.isfinite(w) & ok[:, None]
        ulp = np.spacing(np.abs(w[fin]).astype(w.dtype)).astype(np.float64)
        assert np.max(np.abs(g[fin] - w[fin]) / ulp) <= 1.5


INVARIANT = """\
kernel inv(N = 6, M = 40)
in  X: f32[N, M]
in  v: f32[N]
in  eps: f32
out Y: f32[N, M]
inout Z: f32[N + 1, M]

for i in 0..N:
  for j in 0..M vector:
    Y[i, j] = X[i, j] * rsqrt(v[i] + eps) + v[i] * 2
  for k in 0..M vector:
    Z[i, k] = X[i, k] * sqrt(abs(Z[i + 1, 0]))
"""


def test_costly_loop_invariant_is_computed_once_before_the_vector_loop():
    """A loop-invariant call (or division) in a vector loop becomes a constant before the
    loop; a cheap invariant stays in place, and so does one that reads an array the loop
    writes (even an element it does not write: the check is per array)."""
    program = load_source(INVARIANT)
    text = generate_c(program, "x86-avx512")
    assert "const float dojo_inv1 = 1.0f / sqrtf(v[i] + eps[0]);" in text
    assert "dojo_splat_f32x16(dojo_inv1) + dojo_splat_f32x16(v[i] * 2.0f)" in text
    assert "const float dojo_inv2" not in text
    assert "dojo_splat_f32x16(sqrtf(fabsf(Z[" in text
    assert_matches_interp(program)


def test_vector_lowering_on_other_widths_and_dtypes():
    program = load_source(VEC.replace("M = 37", "M = 12"))
    text = generate_c(program, "x86-avx512")
    assert "j < 8; j += 8" in text and "j < 12; j += 4" in text
    assert_matches_interp(program, opt=None)
    mixed = load_source("""\
kernel mixed(N = 2, M = 21)
in  X: f64[N, M]
in  Z: i32[N, M]
out Y: f64[N, M]
out W: i32[N, M]
out p: f64[N]
out z: i32[N]

for i in 0..N:
  p[i] = 1
  z[i] = 0
  for j in 0..M vector:
    Y[i, j] = select(X[i, j] > 0, X[i, j] * j, abs(X[i, j]) - i) + min(X[i, j], 0.25)
    p[i] *= 1 + X[i, j] * 0.01
  for k in 0..M vector:
    W[i, k] = max(Z[i, k] * 3, abs(Z[i, k]) - k) + i
    z[i] max= Z[i, k]
""")
    text = generate_c(mixed, "x86-avx512")
    assert "dojo_f64x8" in text and "dojo_i32x16" in text and "dojo_hprod_f64x8" in text
    assert_matches_interp(mixed, opt=None)


COLUMN_SUMS = """\
for j in 0..M:
  s[j] = 0
  for i in 0..N vector:
    s[j] += X[i, j]
"""


def test_non_unit_stride_vector_loop_falls_back_to_omp_simd():
    """A target whose ISA has no gather (``generic``: x86-64 with SSE2) leaves a strided
    vector loop to gcc."""
    program = load_source(kernel_text("colsum(N = 16, M = 24)",
                                      "in X: f32[N, M]; out s: f32[M]; out t: f32[M]",
                                      COLUMN_SUMS + "    t[j] = X[0, j]\n"))
    text = generate_c(program, "generic")
    assert "dojo_f32x" not in text
    # t[j] = ... is invariant in i and not a reduction: no simd pragma at all
    assert "#pragma omp simd" not in text
    program2 = load_source(kernel_text("colsum(N = 16, M = 24)", "in X: f32[N, M]; out s: f32[M]",
                                       COLUMN_SUMS))
    text = generate_c(program2, "generic")
    # X[i, j] is strided in i: the sum goes through a private scalar, unforced
    assert "float dojo_r1 = s[j];" in text and "#pragma omp simd" not in text
    assert "gather" not in text
    assert_matches_interp(program, opt=None)
    assert_matches_interp(program2, opt=None)


@pytest.mark.parametrize("isa,dtype,lanes,instruction", [
    ("x86-avx512", "f32", 16, "_mm512_i32gather_ps"),
    ("x86-avx512", "f64", 8, "_mm512_i32gather_pd"),
    ("x86-avx2", "f32", 8, "_mm256_i32gather_ps"),
    ("x86-avx2", "f64", 4, "_mm256_i32gather_pd"),
])
def test_strided_operand_of_a_vector_loop_is_a_gather_where_the_isa_has_one(
        isa, dtype, lanes, instruction):
    """On x86 from AVX2 on, a vector loop reads an operand of constant stride with one gather
    (the column sums read X down a column, stride M), and the reduction stays in vector
    accumulators."""
    program = load_source(kernel_text("colsum(N = 24, M = 20)",
                                      f"in X: {dtype}[N, M]; out s: {dtype}[M]", COLUMN_SUMS))
    text = generate_c(program, isa)
    assert f"dojo_gather_{dtype}x{lanes}(&X[i * M + j], 20)" in text
    assert instruction in text
    assert "#pragma omp simd" not in text


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_gathered_column_sums_match_the_interpreter(dtype):
    """Compiled for this machine (gathers where its ISA has them: the instruction or the
    lane-by-lane fallback), the column sums match the interpreter; the 30 rows run as full
    vectors and every narrower width down to 16 bytes (f32 with AVX-512: 16 + 8 + 4 lanes),
    then a scalar tail."""
    program = load_source(kernel_text("colsum(N = 30, M = 20)",
                                      f"in X: {dtype}[N, M]; out s: {dtype}[M]", COLUMN_SUMS))
    assert ("gather" in generate_c(program, HOST)) == HOST.vector_gathers
    assert_matches_interp(program, opt=None)


def test_gather_offsets_that_overflow_32_bits_are_left_to_gcc():
    """The gather's lane offsets are 32-bit: a stride whose last lane's offset does not fit
    is not gathered."""
    sums = """\
for j in 0..M:
  for k in 0..L:
    s[j, k] = 0
    for i in 0..N vector:
      s[j, k] += X[i, j, k]
"""
    for size, gathered in ((8192, True), (16384, False)):   # 15 x 2^26 fits, 15 x 2^28 not
        program = load_source(kernel_text(f"colsum(N = 16, M = {size}, L = {size})",
                                          "in X: f32[N, M, L]; out s: f32[M, L]", sums))
        text = generate_c(program, "x86-avx512")
        assert ("dojo_gather_f32x16" in text) == gathered, size
        assert ("float dojo_r1 = s[j * L + k];" in text) != gathered, size


def test_a_vector_loop_of_gathers_is_not_forced_and_compiles_quickly():
    """gemv tiled over rows vectorizes the row loop, which reads A with a stride of a whole
    row: forced with omp simd, gcc 12 did not finish compiling it in minutes at K = 4096.
    On x86 with AVX2 it is a gather (an intrinsic, quick to compile); without gathers the
    loop is left to gcc, unforced."""
    program = replay(load_kernel("gemv"), ["fission i after s0", "split i2 by 32",
                                           "split k by 128", "interchange i21 k0",
                                           "interchange i21 k1",
                                           "accumulate y at k1 as acc in register",
                                           "vectorize i21", "parallelize i20"])
    text = generate_c(program, "x86-avx2")
    assert "dojo_gather_f32x8(&A[(32*i20 + i21) * K + 128*k0 + k1], 4096)" in text
    assert not any("omp simd" in line for line in text.splitlines())
    text = generate_c(program, "generic")
    assert "acc[i21] += A[(32*i20 + i21) * K + 128*k0 + k1] * x[128*k0 + k1];" in text
    assert not any("omp simd" in line for line in text.splitlines())
    harness.build(program, "x86-avx2" if X86 else None, timeout=60)
    harness.build(program, "generic" if X86 else None, timeout=60)
    assert_matches_interp(replay(load_kernel("gemv", {"N": 64, "K": 256}),
                                 ["fission i after s0", "split i2 by 32", "split k by 128",
                                  "interchange i21 k0", "interchange i21 k1",
                                  "accumulate y at k1 as acc in register", "vectorize i21",
                                  "parallelize i20"]))


def test_generic_target_without_libmvec_compiles_and_matches():
    """The arm-neon description (16-byte vectors, the portable inline exp, per-lane libm
    calls for the other functions) is plain GNU C."""
    program = load_source(VEC)
    text = generate_c(program, "arm-neon")
    assert "dojo_f32x4" in text and "dojo_vexpf_f32x4" in text and "_ZGV" not in text
    assert "dojo_lane_logf_f32x4" in generate_c(load_source(FUNCS), "arm-neon")
    inputs = random_inputs(program, 1)
    got = harness.run_c(program, inputs, target=TARGETS["generic"])
    assert all(e <= 1 for e in harness.compare(got, interp.run(program, inputs), program).values())


# --------------------------------------------------------------------------- semantics corners

CORNERS = {
    "ints": kernel_text("ints(N = 12)",
                        "in A: i32[N]; in B: i64[N]; out Q: i32[N]; out R: i64[N]; "
                        "out S: i64[N]; out m: i32", """\
m = 0
for i in 0..N:
  Q[i] = A[i] // (i - 5) + A[i] % 4
  R[i] = B[i] % (i - 5) - (B[i] // -3)
  S[i] = abs(B[i] - 20) * 3 + min(B[i], 4) - max(i - 6, 0)
  m max= A[i] * (i % 3 - 1)
"""),
    "indices": kernel_text("indices(N = 50)", "in X: f32[N]; out Y: f32[N]; out Z: f32[N]", """\
for i0 in 0..(N + 7) // 8:
  for i1 in 0..min(8, N - 8*i0):
    Y[(8*i0 + i1 - 3) % N] = X[(8*i0 + i1 + 100) // 3 - 33] + (i1 - 4) // 3
for i in 0..N:
  local big: f32[100000]
  local sm: f32[4, 4]
  big[i * 1000] = X[i]
  sm[i % 4, (i + 1) % 4] = big[i * 1000] * 2
  Z[i] = sm[i % 4, (i + 1) % 4]
"""),
    "bf16": kernel_text("lowp(N = 33)",
                        "in A: bf16[N]; in C: bf16[N]; out P: bf16[N]; out R: bf16[N]; "
                        "out s: bf16", """\
s = 0
for i in 0..N vector:
  P[i] = A[i] * C[i] + 1
  R[i] = exp(A[i]) + C[i] * 3
for j in 0..N:
  s += A[j] * 0.1
  P[j] max= C[j]
"""),
    "f16": kernel_text("half(N = 33)", "in B: f16[N]; out Q: f16[N]; out t: f16", """\
t = 0
for i in 0..N vector:
  Q[i] = B[i] * B[i] - exp(B[i]) / 3 + sqrt(abs(B[i])) * max(B[i], 0.5) - i // 4
for j in 0..N:
  t += B[j] * 0.1
  Q[j] min= t
"""),
    "names": kernel_text("names(float = 8, N = 4)",
                         "in expf: f32[float]; in dojo_x: f32[float]; out int: f32[float]", """\
for double in 0..float:
  local sqrtf: f32
  sqrtf = sqrt(expf[double] * expf[double] + 1)
  int[double] = sqrtf + dojo_x[double] + N
"""),
}


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_semantic_corners_match_interpreter(name):
    program = load_source(CORNERS[name])
    inputs = random_inputs(program, 3)
    if name == "ints":
        inputs = {"A": np.arange(-6, 6, dtype=np.int32) * 7,
                  "B": np.arange(-6, 6, dtype=np.int64) * 5}
    got = harness.run_c(program, inputs, opt=TEST_OPT)
    want = interp.run(program, inputs)
    errors = harness.compare(got, want, program)
    assert all(e <= 1 for e in errors.values()), (errors, got, want)
    if name == "indices":
        assert "dojo_alloc(400000)" in generate_c(program) and "free(big);" in generate_c(program)
    if name == "names":
        assert "const float *restrict expf_" in generate_c(program)


# --------------------------------------------------------------------------- transcendentals

FUNCS = kernel_text("fns(N = 100000)",
                    "in X: f32[N]; in P: f32[N]; out E: f32[N]; out T: f32[N]; out R: f32[N]; "
                    "out L: f32[N]; out S: f32[N]; out W: f32[N]", """\
for i in 0..N vector:
  E[i] = exp(X[i])
  T[i] = tanh(X[i])
  R[i] = erf(X[i])
  L[i] = log(P[i])
  S[i] = sqrt(P[i])
  W[i] = pow(P[i], X[i])
""")

# stated bounds, in units in the last place of the f32 result (measured with glibc 2.36's
# libmvec, AVX-512: exp 2.5, tanh 1.3, erf 4.0, log 3.7, sqrt 0.5, pow 0.6)
ULP_BOUND = {"E": 4, "T": 4, "R": 5, "L": 4, "S": 1, "W": 4}


def _funcs_inputs():
    rng = np.random.default_rng(0)
    x = rng.uniform(-80, 80, 100000)
    x[:40000] = rng.uniform(-6, 6, 40000)
    x[:8] = [0.0, -0.0, 1e-30, -1e-30, 88.0, -104.0, 1e-5, -3e-3]
    p = np.exp(rng.uniform(-80, 80, 100000))
    return {"X": x.astype(np.float32), "P": p.astype(np.float32)}


@pytest.mark.parametrize("target", ["host", "generic"])
def test_vector_transcendentals_accuracy(target):
    program = load_source(FUNCS)
    inputs = _funcs_inputs()
    tgt = HOST if target == "host" else TARGETS["generic"]
    got = harness.run_c(program, inputs, target=tgt)
    x, p = inputs["X"].astype(np.float64), inputs["P"].astype(np.float64)
    with np.errstate(all="ignore"):
        exact = {"E": np.exp(x), "T": np.tanh(x), "R": erf64(x), "L": np.log(p),
                 "S": np.sqrt(p), "W": np.power(p, x)}
    for name, ref in exact.items():
        with np.errstate(over="ignore"):
            r32 = ref.astype(np.float32)
        g = got[name].astype(np.float64)
        assert np.array_equal(np.isfinite(g), np.isfinite(r32)), name
        finite = np.isfinite(r32) & (np.abs(ref) >= np.finfo(np.float32).tiny)
        ulp = np.spacing(np.abs(r32[finite])).astype(np.float64)
        worst = float(np.max(np.abs(g[finite] - ref[finite]) / ulp))
        assert worst <= ULP_BOUND[name], f"{name}: {worst:.2f} ulp"


EXP_SWEEP = kernel_text("e(N = 1048576)", "in X: f32[N]; out E: f32[N]", """\
for i in 0..N vector:
  E[i] = exp(X[i])
""")

# The inline vector expf (c_math.vexpf_text), max error in ulp of the float32 result against
# float64 numpy.exp for normal results, measured over every float in [-104, 89]: the AVX-512
# path (vscalefps; measured 1.061) and the portable one (integer shifts; 1.321 with FMA
# contraction, 1.345 without: the generic target has no FMA on x86-64). Subnormal results:
# within one unit of 2^-149 (measured 0.93).
EXP_ULP = {"host": 1.07 if HOST.name == "x86-avx512" else 1.33, "portable": 1.33,
           "generic": 1.35, "avx2": 1.33}
# the AVX2 code runs on an AVX-512 host too (its target turns AVX-512 off)
HOST_AVX2 = HOST.name in ("x86-avx512", "x86-avx2")
EXP_SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 1e30, -1e30, 89.5, -104.5, 88.72283,
                88.72284, -87.3365, -103.972, -103.973, 0.0, -0.0, 1e-30, -1e-40, 2e-45]


def _exp_sweep_inputs():
    """Every 2137th float32 in [-104, 89] (about a million, all exponents and mantissa
    patterns), after the special cases."""
    pos = np.arange(0, int(np.float32(89).view(np.uint32)) + 1, 2137, dtype=np.uint64)
    neg = np.arange(0x80000000, int(np.float32(-104).view(np.uint32)) + 1, 2137, dtype=np.uint64)
    bits = np.concatenate([pos, neg]).astype(np.uint32)
    x = np.concatenate([np.array(EXP_SPECIALS, np.float32), bits.view(np.float32)])
    n = 1048576
    return np.resize(x, n) if len(x) < n else x[:n]


@pytest.mark.parametrize("variant", ["host", "portable", "generic", "avx2"])
def test_vector_exp_error_bound(variant):
    """The inline vector exp against float64 numpy.exp: the stated ulp bound for normal
    results, one unit of 2^-149 for subnormal ones, exact 0 and inf beyond the range,
    -inf -> 0, inf -> inf, NaN -> NaN. The sweep's inputs mix in-range and out-of-range
    lanes in one vector, so both paths of the SSE/AVX exp (a short one for vectors in
    [-86, 86], the full-range one) are checked."""
    if variant == "avx2" and not HOST_AVX2:
        pytest.skip("needs an x86 host with AVX2")
    program = load_source(EXP_SWEEP)
    target = {"host": HOST, "generic": TARGETS["generic"], "avx2": TARGETS["x86-avx2"],
              "portable": replace(HOST, cflags=HOST.cflags + ("-DDOJO_PORTABLE",))}.get(variant)
    text = generate_c(program, target)
    assert "dojo_vexpf_f32x" in text
    if variant == "avx2":
        assert "_mm256_movemask_ps(" in text      # the short path for in-range vectors
    x = _exp_sweep_inputs()
    g = harness.run_c(program, {"X": x}, target=target)["E"].astype(np.float64)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
        r32 = ref.astype(np.float32)
    nan = np.isnan(x)
    assert np.array_equal(np.isnan(g), nan)
    inf = np.isinf(r32)
    assert np.array_equal(np.isinf(g), inf) and np.all(g[inf] > 0)
    zero = (r32 == 0) & ~nan
    assert np.all(g[zero] == 0)
    tiny = np.finfo(np.float32).tiny
    sub = (np.abs(r32) < tiny) & ~nan
    assert np.max(np.abs(g[sub] - ref[sub])) <= 2.0 ** -149
    normal = ~sub & ~inf & ~nan
    ulp = np.spacing(np.abs(r32[normal])).astype(np.float64)
    worst = float(np.max(np.abs(g[normal] - ref[normal]) / ulp))
    assert worst <= EXP_ULP[variant], f"{worst:.3f} ulp"


# ISA flags that make the assembly of a target's code independent of the host's CPU
# (-march=native on a host without AVX-512 would not define __AVX512VL__): assembly only,
# never run here
ISA_FLAGS = {"x86-avx512": ("-mavx512f", "-mavx512vl", "-mavx512dq", "-mavx512bw", "-mfma"),
             "x86-avx2": ("-mavx2", "-mfma")}


@pytest.mark.skipif(not X86 or "expf" not in HOST.libmvec, reason="needs x86 glibc libmvec")
@pytest.mark.parametrize("isa, letter", [("x86-avx512", "eN16"), ("x86-avx2", "dN8")])
def test_transcendentals_stay_vectorized_in_assembly(tmp_path, isa, letter):
    cc = find_compiler()
    target = TARGETS[isa]
    libmvec = replace(target, vector_exp="libmvec")
    for program, tgt, want in ((load_source(FUNCS), target, f"_ZGV{letter}v_tanhf"),
                               (load_source(FUNCS), libmvec, f"_ZGV{letter}v_expf"),
                               (load_kernel("softmax"), target, "_ZGV")):  # auto-vectorized
        src = tmp_path / "k.c"
        src.write_text(generate_c(program, tgt))
        asm = tmp_path / "k.s"
        subprocess.run([cc, *tgt.cflags, *ISA_FLAGS[isa], "-S", "-o", str(asm), str(src)],
                       check=True)
        text = asm.read_text()
        assert want in text, program.name
        assert "call\texpf@PLT" not in text or program.name == "softmax"
        if program.name == "fns" and tgt is target:      # the inline exp: no call at all
            assert f"_ZGV{letter}v_expf" not in text
            if isa == "x86-avx512":
                assert "vscalefps" in text


# --------------------------------------------------------------------------- i8

INT8 = kernel_text("q8(M = 3, N = 37, K = 45)",
                   "in A: i8[M, K]; in B: i8[K, N]; in Bt: i8[N, K]; out C: i32[M, N]; "
                   "out T: i32[M, N]; out E: i64[M, K]; out D: i8[M, N]; out F: i8[M]", """\
for i in 0..M:
  for j in 0..N:
    C[i, j] = 0
  for k in 0..K:
    for j2 in 0..N:
      C[i, j2] += A[i, k] * B[k, j2]
  for j3 in 0..N:
    T[i, j3] = 0
    for k3 in 0..K:
      T[i, j3] += A[i, k3] * Bt[j3, k3]
  for k4 in 0..K:
    E[i, k4] = A[i, k4] * A[i, k4] * 100000 - k4
  for j5 in 0..N:
    D[i, j5] = A[i, 0] * B[0, j5] + j5
  F[i] = -128
  for k6 in 0..K:
    F[i] max= A[i, k6]
""")


def _i8_inputs(program, seed):
    rng = np.random.default_rng(seed)
    out = {d.name: rng.integers(-128, 128, size=tuple(const_value(x, program.size_values)
                                                       for x in d.dims)).astype(np.int8)
           for d in program.arrays if d.kind == "in"}
    out["A"][0], out["B"][:, 0], out["Bt"][0] = -128, -128, -128    # (-128)^2 overflows int8
    return out


def test_i8_matmul_vector_schedule_matches_interpreter():
    """int8 x int8 -> int32: i8 loads widen to i32 lanes in the explicit vector lowering
    (a store loop and a reduction), an i8 product into i64 widens to i64 lanes, and loops
    that store into i8 arrays fall back to omp simd; all exact, stores wrapped as the
    interpreter does."""
    original = load_source(INT8)
    program = replay(original, ["vectorize j2", "vectorize k3", "vectorize k4", "vectorize j5",
                                "vectorize k6"])
    text = generate_c(program, "x86-avx512")
    assert "typedef int8_t dojo_i8x16 __attribute__((vector_size(16)));" in text
    assert "dojo_widen_i8_i32x16(&B[k * N + j2])" in text
    assert "dojo_widen_i8_i32x16(&Bt[j3 * K + k3])" in text
    assert "dojo_widen_i8_i64x8(&A[i * K + k4])" in text
    assert "_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p))" in text
    assert "_mm512_cvtepi8_epi64(_mm_loadl_epi64((const __m128i *)p))" in text
    assert "return __builtin_convertvector(dojo_load_i8x16(p), dojo_i32x16);" in text
    assert "dojo_hsum_i32x16" in text
    assert "#pragma omp simd\n    for (int64_t j5 = 0; j5 < N; ++j5)" in text
    assert "#pragma omp simd reduction(max:dojo_r" in text and "int8_t dojo_r" in text
    assert "dojo_store_i8" not in text and "dojo_load_i8x16(&D" not in text
    for seed in range(2):
        inputs = _i8_inputs(original, seed)
        want = interp.run(original, inputs)
        assert want["C"][0, 0] == 45 * 16384
        for target in (None, "generic"):
            got = harness.run_c(program, inputs, target=target)
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} {target}")
        got = harness.run_c(original, inputs, opt=TEST_OPT)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} scalar")


@pytest.mark.parametrize("target", ["x86-avx2", "arm-neon"])
def test_i8_widening_loads_use_the_targets_sign_extension(target):
    """An i8 load widened to i32 lanes is one sign-extending instruction where the target has
    it (gcc 12 scalarises ``__builtin_convertvector`` of a vector narrower than 16 bytes),
    and the result equals the interpreter's, run on the target (qemu for Arm)."""
    if target == "arm-neon":
        require_cross_route(target)
    elif detect_host_target().name not in ("x86-avx2", "x86-avx512"):
        pytest.skip("this machine cannot run AVX2 code")
    original = load_source(INT8)
    program = replay(original, ["vectorize j2", "vectorize k3"])
    text = generate_c(program, target)
    lanes = TARGETS[target].lanes(4)
    assert f"dojo_widen_i8_i32x{lanes}(&B[k * N + j2])" in text
    fast = {"x86-avx2": "_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p))",
            "arm-neon": "vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w)))))"}
    assert fast[target] in text
    inputs = _i8_inputs(original, 3)
    want = interp.run(original, inputs)
    got = harness.run_c(program, inputs, target=target)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} {target}")


def test_i8_stores_wrap_in_c():
    program = load_source(kernel_text("w8(N = 40)", "in A: i8[N]; out D: i8[N, 4]",
                                      I8_WRAPPING_STORES))
    A = np.random.default_rng(5).integers(-128, 128, size=40).astype(np.int8)
    A[:4] = [-128, 127, 100, -100]
    got = harness.run_c(program, {"A": A}, opt=TEST_OPT)["D"]
    a = A.astype(np.int64)
    want = np.stack([a * a, a + 300, np.maximum(0, 2 * a), (4 * a) // 3], 1).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, interp.run(program, {"A": A})["D"])
    assert list(got[:4, 1]) == [-84, -85, -112, -56] and got[0, 0] == 0


# --------------------------------------------------------------------------- targets

def test_target_detection_from_cpuinfo():
    zen5 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq avx512bw avx512vl\n"
    assert target_from_cpuinfo(zen5, "x86_64").name == "x86-avx512"
    assert target_from_cpuinfo("flags\t: sse2 avx avx2 fma\n", "x86_64").name == "x86-avx2"
    assert target_from_cpuinfo("flags\t: sse2\n", "x86_64").name == "generic"
    assert target_from_cpuinfo("Features\t: fp asimd sve\n", "aarch64").name == "arm-sve"
    assert target_from_cpuinfo("Features\t: fp asimd\n", "aarch64").name == "arm-neon"
    assert target_from_cpuinfo("isa\t\t: rv64imafdcv_zicsr\n", "riscv64").name == "riscv-rvv"
    assert target_from_cpuinfo("isa\t\t: rv64imafdc\n", "riscv64").name == "generic"
    for t in TARGETS.values():
        assert t.vector_bytes in (16, 32, 64) and "-O3" in t.cflags and "-fopenmp" in t.cflags
    assert TARGETS["x86-avx512"].libmvec_name("expf", 64) == "_ZGVeN16v_expf"
    assert TARGETS["x86-avx512"].libmvec_name("erf", 32) == "_ZGVdN4v_erf"
    assert TARGETS["x86-avx2"].libmvec_name("powf", 32, 2) == "_ZGVdN8vv_powf"
    assert TARGETS["arm-neon"].libmvec_name("expf", 16) is None


def test_cache_size_from_sysfs(tmp_path):
    """The last-level data or unified cache of cpu0 (instruction caches left out); named
    targets that run here carry it, foreign ones do not; the AVX2 target turns AVX-512 off
    so that its code is AVX2 code on any host."""
    from dojo_core.codegen.targets import get_target, host_cache_bytes, is_foreign, \
        parse_cache_size
    assert parse_cache_size("32768K\n") == 32 << 20 and parse_cache_size("1M") == 1 << 20
    assert parse_cache_size("512") == 512 and parse_cache_size("big") == 0
    for k, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "1024K"), (3, "Unified", "96M"),
                                             (4, "Instruction", "8M")]):
        d = tmp_path / f"index{k}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert host_cache_bytes.__wrapped__(str(tmp_path)) == 96 << 20
    assert host_cache_bytes.__wrapped__(str(tmp_path / "none")) == 0
    for name, t in TARGETS.items():
        got = get_target(name).cache_bytes
        assert got == (0 if is_foreign(t) else host_cache_bytes()), name
    assert "-mno-avx512f" in TARGETS["x86-avx2"].cflags


def test_host_target():
    assert HOST.name in TARGETS
    if X86 and "avx512f" in Path("/proc/cpuinfo").read_text():
        assert HOST.name == "x86-avx512" and HOST.lanes(4) == 16


def test_a_vector_loop_ends_in_vectors_down_to_eight_bytes_then_scalars():
    """46 f32 lanes on AVX-512 are 16 + 16 + 8 + 4 + 2 (the tail of a 48-wide register tile
    in k2mm), 23 are 16 + 4 + 2 + 1 scalar; a reduction keeps 16-byte vectors at least (its
    horizontal sums are written for those)."""
    def program(m, body):
        text = kernel_text(f"tail(N = 3, M = {m})", "in s: f32; in A: f32[N, M]; "
                           "inout B: f32[N, M]; out r: f32[N]", body)
        return replay(load_source(text), ["vectorize j"])
    axpy = program(46, "for i in 0..N:\n  r[i] = 0\n  for j in 0..M:\n    B[i, j] += s * A[i, j]\n")
    text = generate_c(axpy, "x86-avx512")
    for lanes, start, end in ((16, 0, 32), (8, 32, 40), (4, 40, 44), (2, 44, 46)):
        assert f"for (int64_t j = {start}; j < {end}; j += {lanes})" in text, lanes
    assert_matches_interp(axpy)
    odd = generate_c(program(23, "for i in 0..N:\n  r[i] = 0\n  for j in 0..M:\n"
                             "    B[i, j] += s * A[i, j]\n"), "x86-avx512")
    assert "j += 2)" in odd and "for (int64_t j = 22; j < 23; ++j)" in odd
    rowsum = program(46, "for i in 0..N:\n  r[i] = 0\n  for j in 0..M:\n    r[i] += A[i, j]\n")
    reduced = generate_c(rowsum, "x86-avx512")
    assert "dojo_f32x2" not in reduced and "for (int64_t j = 44; j < 46; ++j)" in reduced

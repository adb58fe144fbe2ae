"""The reference interpreter (dojo_core.interp): semantics of every construct, dtypes,
input validation, the vectorisation rule (vectorised == sequential, bit for bit), speed."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dojo_core import interp, ir
from dojo_core.interp import codegen as interp_codegen
from dojo_core.interp import runtime as rt
from dojo_core.checker import check
from dojo_core.parser import parse

from kernels_text import I8_WRAPPING_STORES, MATMUL_MN_LOOPS, kernel_text

RNG = np.random.default_rng(2024)


def kernel(text: str) -> ir.Program:
    program = parse(text, "test.dojo")
    assert check(program, "test.dojo") == [], check(program, "test.dojo")
    return program


def same(a, b) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def run_both(program, inputs) -> dict:
    """Run vectorised and sequential; they must agree bit for bit."""
    fast = interp.run(program, inputs)
    slow = interp.run(program, inputs, vectorize=False)
    assert set(fast) == set(slow)
    for name in fast:
        assert same(fast[name], slow[name]), (name, fast[name], slow[name])
    return fast


def f32(*shape):
    return RNG.uniform(-1, 1, size=shape).astype(np.float32)


# ----------------------------------------------------------------------------- helpers

def test_numpy_dtype():
    assert interp.numpy_dtype("f32") == np.float32
    assert interp.numpy_dtype("f64") == np.float64
    assert interp.numpy_dtype("f16") == np.float16
    assert interp.numpy_dtype("bf16") == np.float32
    assert interp.numpy_dtype("i32") == np.int32
    assert interp.numpy_dtype("i64") == np.int64
    assert interp.numpy_dtype("i8") == np.int8
    with pytest.raises(ValueError):
        interp.numpy_dtype("f8")


def test_eval_int_and_array_shape():
    e = parse("kernel t(N = 5)\nout Y: f32[N]\n\nfor i in 0..min(N, (N + 7) // 4 - 3 % 2):\n"
              "  Y[i] = 0\n", "t")
    hi = e.body[0].hi
    assert interp.eval_int(hi, {"N": 5}) == min(5, 12 // 4 - 1)
    neg = ir.BinOp("//", ir.Const(-7), ir.Const(2))
    assert interp.eval_int(neg, {}) == -4
    assert interp.eval_int(ir.BinOp("%", ir.Const(-7), ir.Const(3)), {}) == 2
    assert interp.eval_int(ir.Call("max", (ir.Var("a"), ir.Neg(ir.Var("a")))), {"a": -3}) == 3
    for bad in (ir.Var("zz"), ir.Const(1.5), ir.BinOp("/", ir.Const(1), ir.Const(2)),
                ir.BinOp("//", ir.Const(1), ir.Const(0))):
        with pytest.raises(ValueError):
            interp.eval_int(bad, {})
    p = kernel("kernel t(N = 3, M = 4)\nin X: f32[N, M + 2]\nin a: f32\nout Y: f32[N]\n\n"
               "for i in 0..N:\n  Y[i] = X[i, 0] * a\n")
    assert interp.array_shape(p, p.arrays[0]) == (3, 6)
    assert interp.array_shape(p, p.arrays[1]) == ()
    assert interp.array_shape(p, p.arrays[0].dims[1:]) == (6,)
    assert interp.array_shape(p.with_sizes({"M": 1}), p.arrays[0]) == (3, 3)


def test_erf_accuracy_against_math_erf():
    x = np.concatenate([np.linspace(-7, 7, 140001), np.linspace(2.45, 2.55, 2001),
                        [0.0, 1e-300, -1e-12, 30.0, -30.0]])
    want = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(rt.erf(x) - want)) < 1e-14
    # scalars take a separate path that must agree bit for bit
    for v in x[::997]:
        assert rt.erf(np.float64(v)) == rt.erf(np.array([v]))[0]
    assert rt.erf(np.float32(0.5)).dtype == np.float32
    assert rt.erf(np.inf) == 1.0 and rt.erf(-np.inf) == -1.0 and np.isnan(rt.erf(np.nan))


def test_round_bf16_is_nearest_even():
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -(1 + 2 ** -8),
                  np.inf, -np.inf, 3.4e38, 1e-40, 0.0], dtype=np.float32)
    want = [1.0, 1.0, 1 + 2 ** -6, 1 + 2 ** -7, -1.0, np.inf, -np.inf, np.inf]
    got = rt.round_bf16(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[:8], np.array(want, dtype=np.float32))
    assert np.isnan(rt.round_bf16(np.float32(np.nan)))
    assert np.all(got.view(np.uint32) & 0xFFFF == 0)


# ----------------------------------------------------------------------------- statements

def test_every_statement_op():
    p = kernel(kernel_text("t(N = 37)", "in X: f64[N]; inout A: f64[N]; out Y: f64[N, 5]", """\
for i in 0..N:
  Y[i, 0] = X[i]
  Y[i, 1] = 2
  Y[i, 1] += X[i]
  Y[i, 2] = 3
  Y[i, 2] *= X[i]
  Y[i, 3] = 0.25
  Y[i, 3] max= X[i]
  Y[i, 4] = 0.25
  Y[i, 4] min= X[i]
  A[i] += X[i] * X[i]
"""))
    X, A = RNG.normal(size=37), RNG.normal(size=37)
    out = run_both(p, {"X": X, "A": A})
    want = np.stack([X, 2 + X, 3 * X, np.maximum(0.25, X), np.minimum(0.25, X)], axis=1)
    assert same(out["Y"], want)
    assert same(out["A"], A + X * X)


def test_reductions_all_ops_vectorised():
    p = kernel(kernel_text("t(N = 20, M = 30)",
                           "in X: f32[N, M]; out S: f32[N]; out P: f32[N]; out H: f32[N]; "
                           "out L: f32[N]", """\
for i in 0..N:
  S[i] = 0
  P[i] = 1
  H[i] = -inf
  L[i] = inf
for a in 0..N:
  for b in 0..M:
    S[a] += X[a, b]
for c in 0..N:
  for d in 0..M:
    P[c] *= 1 + X[c, d] / 10
for e in 0..N:
  for f in 0..M:
    H[e] max= X[e, f]
for g in 0..N:
  for h in 0..M:
    L[g] min= X[g, h]
"""))
    X = f32(20, 30)
    out = run_both(p, {"X": X})
    seq = np.zeros(20, np.float32)
    prod = np.ones(20, np.float32)
    for j in range(30):       # sequential order, in float32
        seq += X[:, j]
        prod *= np.float32(1) + X[:, j] / np.float32(10)
    assert same(out["S"], seq) and same(out["P"], prod)
    assert same(out["H"], X.max(axis=1)) and same(out["L"], X.min(axis=1))
    assert "np.add.at" in interp.source(p) and "np.minimum.at" in interp.source(p)


def test_every_function_select_and_operators():
    p = kernel(kernel_text("t(N = 40)", "in X: f32[N]; in Z: f32[N]; out Y: f32[N, 16]", """\
for i in 0..N:
  Y[i, 0] = exp(X[i])
  Y[i, 1] = log(Z[i])
  Y[i, 2] = sqrt(Z[i])
  Y[i, 3] = rsqrt(Z[i])
  Y[i, 4] = tanh(X[i])
  Y[i, 5] = erf(X[i])
  Y[i, 6] = abs(X[i])
  Y[i, 7] = max(X[i], Z[i] - 1)
  Y[i, 8] = min(X[i], Z[i] - 1)
  Y[i, 9] = pow(Z[i], X[i])
  Y[i, 10] = select(X[i] < 0, -X[i], X[i] / Z[i])
  Y[i, 11] = select(i >= 20, X[i], 7)
  Y[i, 12] = select(X[i] != Z[i], inf, -inf)
  Y[i, 13] = X[i] - Z[i] * 2.5
  Y[i, 14] = i * 0.5 + N
  Y[i, 15] = -(X[i] / 3)
"""))
    X, Z = f32(40), RNG.uniform(0.1, 2, size=40).astype(np.float32)
    Y = run_both(p, {"X": X, "Z": Z})["Y"]
    i = np.arange(40)
    erf32 = np.array([math.erf(v) for v in X.astype(np.float64)], dtype=np.float32)
    want = [np.exp(X), np.log(Z), np.sqrt(Z), np.float32(1) / np.sqrt(Z), np.tanh(X), erf32,
            np.abs(X), np.maximum(X, Z - np.float32(1)), np.minimum(X, Z - np.float32(1)),
            np.power(Z, X), np.where(X < 0, -X, X / Z), np.where(i >= 20, X, 7),
            np.where(X != Z, np.inf, -np.inf), X - Z * np.float32(2.5), i * 0.5 + 40, -(X / 3)]
    for col, w in enumerate(want):
        np.testing.assert_allclose(Y[:, col], np.asarray(w, dtype=np.float32), rtol=2e-7,
                                   err_msg=f"column {col}")


def test_integer_dtypes_and_integer_arithmetic():
    p = kernel(kernel_text("t(N = 9)",
                           "in A: i32[N]; in k: i64; out B: i32[N, 5]; out C: i64[N]", """\
for i in 0..N:
  B[i, 0] = A[i] // 3
  B[i, 1] = A[i] % 3
  B[i, 2] = A[i] * A[i] - i
  B[i, 3] = max(A[i], 2) + min(A[i], -2)
  B[i, 4] = select(A[i] > 0, A[i], -A[i])
  C[i] = k * 4000000000 + (i + 1) // 2 - N
"""))
    A = np.arange(-4, 5, dtype=np.int32)
    out = run_both(p, {"A": A, "k": 3})
    i = np.arange(9)
    want = np.stack([A // 3, A % 3, A * A - i, np.maximum(A, 2) + np.minimum(A, -2), np.abs(A)], 1)
    assert same(out["B"], want.astype(np.int32))
    assert same(out["C"], (3 * 4000000000 + (i + 1) // 2 - 9).astype(np.int64))


INT8_MATMUL = kernel_text("q(M = 6, N = 20, K = 40)",
                          "in A: i8[M, K]; in B: i8[K, N]; out C: i32[M, N]; out E: i64[M]",
                          MATMUL_MN_LOOPS + """\
  E[i] = 0
  for k2 in 0..K:
    E[i] += A[i, k2] * A[i, k2] * 1000000
""")


def i8(*shape):
    return RNG.integers(-128, 128, size=shape).astype(np.int8)


def test_i8_arithmetic_is_promoted_and_exact():
    """i8 values are promoted before any arithmetic: (-128) * (-128) = 16384 overflows int8
    (numpy alone gives 0) but is exact here, and so is the int32 (and int64) accumulation."""
    p = kernel(INT8_MATMUL)
    A, B = i8(6, 40), i8(40, 20)
    A[0, :], B[:, 0] = -128, -128
    out = run_both(p, {"A": A, "B": B})
    assert same(out["C"], (A.astype(np.int64) @ B.astype(np.int64)).astype(np.int32))
    assert out["C"][0, 0] == 40 * 16384
    assert same(out["E"], (A.astype(np.int64) ** 2).sum(axis=1) * 1000000)
    with np.errstate(over="ignore"):
        assert np.int8(-128) * np.int8(-128) == 0        # unpromoted int8 arithmetic


def test_i8_stores_wrap_modulo_256():
    """A store into an i8 array computes in int32 and wraps (two's complement), as numpy's
    astype(int8) and C's conversion to int8_t; max= and // see the unwrapped int32 value."""
    p = kernel(kernel_text("w(N = 40)", "in A: i8[N]; out D: i8[N, 5]",
                           I8_WRAPPING_STORES + """\
  D[i, 4] = A[i]
  D[i, 4] += 200
"""))
    A = i8(40)
    A[:4] = [-128, 127, 100, -100]
    out = run_both(p, {"A": A})
    a = A.astype(np.int64)
    want = np.stack([a * a, a + 300, np.maximum(0, 2 * a), (4 * a) // 3, a + 200], 1)
    assert same(out["D"], want.astype(np.int8))
    assert list(out["D"][:4, 1]) == [-84, -85, -112, -56]     # 172, 427, 400, 200 mod 256
    assert out["D"][0, 0] == 0 and out["D"][2, 0] == 16       # 16384, 10000 mod 256
    assert list(out["D"][:4, 2]) == [0, -2, -56, 0]           # max(0, 254) = 254 -> -2
    assert same(rt.wrap_i8(np.int32(300)), np.int8(44)) and rt.wrap_i8(-129) == 127


def test_integer_expressions_in_float_context_are_exact():
    # (i + 1) // 2 is integer arithmetic, converted to f16 once: 2049 is not an f16 value
    p = kernel("kernel t(N = 4100)\nout Y: f16[N]\n\nfor i in 0..N:\n  Y[i] = (i + 1) // 2\n")
    Y = run_both(p, {})["Y"]
    assert same(Y, ((np.arange(4100) + 1) // 2).astype(np.float16))


def test_f64_and_f16_arithmetic_happen_in_their_dtype():
    p = kernel("kernel t(N = 50)\nin X: f16[N]\nin D: f64[N]\nout Y: f16[N]\nout E: f64[N]\n\n"
               "for i in 0..N:\n  Y[i] = X[i] * X[i] + 0.1\n  E[i] = D[i] / 3 + 1e-300\n")
    X, D = f32(50).astype(np.float16), RNG.normal(size=50)
    out = run_both(p, {"X": X, "D": D})
    assert same(out["Y"], X * X + np.float16(0.1))
    assert same(out["E"], D / 3 + 1e-300)


def test_bf16_rounds_inputs_and_every_store():
    p = kernel(kernel_text("t(N = 64)", "in X: bf16[N]; out Y: bf16[N]; out S: bf16", """\
S = 0
for i in 0..N:
  Y[i] = X[i] * 3
  S += X[i]
"""))
    X = f32(64)
    out = run_both(p, {"X": X})
    xb = rt.round_bf16(X)
    assert out["Y"].dtype == np.float32
    assert same(out["Y"], rt.round_bf16(xb * np.float32(3)))
    s = np.float32(0)
    for v in xb:                              # every partial sum rounded to bf16
        s = rt.round_bf16(s + v)
    assert same(out["S"], np.asarray(s))
    assert np.all(out["Y"].view(np.uint32) & 0xFFFF == 0)
    assert X[0] == X[0] and not np.array_equal(X, xb)  # the input itself is left alone


# ----------------------------------------------------------------------------- structure

def test_split_tail_loops_with_min_bounds():
    text = kernel_text("t(N = 70)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i0 in 0..(N + 31) // 32:
  for i1 in 0..min(32, N - 32*i0):
    B[32*i0 + i1] = A[32*i0 + i1] * 2
for j0 in 0..(N + 7) // 8:
  C[8*j0] = 0
  for j1 in 0..min(8, N - 8*j0):
    C[8*j0 + j1] = A[8*j0 + j1] + j0
""")
    for n in (70, 64, 1, 33):
        p = kernel(text).with_sizes({"N": n})
        A = f32(n)
        out = run_both(p, {"A": A})
        assert same(out["B"], A * 2)
        assert same(out["C"], A + (np.arange(n) // 8).astype(np.float32))


def test_triangular_and_dependent_bounds():
    p = kernel(kernel_text("t(N = 12)", "in L: f64[N, N]; out Y: f64[N, N]; out R: f64[N]", """\
for i in 0..N:
  for j in 0..N:
    Y[i, j] = 0
for a in 0..N:
  for b in 0..a + 1:
    Y[a, b] = L[a, b] + max(a - 3, 0)
for r in 0..N:
  R[r] = 0
  for c in max(r - 2, 0)..min(r + 3, N):
    R[r] += L[r, c]
"""))
    L = RNG.normal(size=(12, 12))
    out = run_both(p, {"L": L})
    want = np.tril(L) + np.tril(np.maximum(np.arange(12) - 3, 0)[:, None] + 0 * L)
    assert same(out["Y"], want)
    R = np.zeros(12)
    for r in range(12):
        for c in range(max(r - 2, 0), min(r + 3, 12)):
            R[r] += L[r, c]
    assert same(out["R"], R)


def test_locals_are_per_block_and_temps_work():
    p = kernel(kernel_text("t(N = 6, M = 17)",
                           "in X: f32[N, M]; out Y: f32[N, M]; temp T: f32[M]", """\
for i in 0..N:
  local s: f32
  local row: f32[M]
  s = 0
  for j in 0..M:
    row[j] = X[i, j] * X[i, j]
    s += row[j]
  for k in 0..M:
    T[k] = row[k] / s
  for l in 0..M:
    Y[i, l] = T[l] + i
"""))
    X = f32(6, 17)
    Y = run_both(p, {"X": X})["Y"]
    sq = X * X
    s = np.zeros(6, np.float32)
    for j in range(17):
        s += sq[:, j]
    assert same(Y, sq / s[:, None] + np.arange(6, dtype=np.float32)[:, None])
    assert set(interp.run(p, {"X": X})) == {"Y"}        # temps are not returned


def test_local_is_recreated_uninitialised_at_each_block_entry():
    # not a valid kernel (reads before writes): run without checking, to see the fill
    p = parse("kernel t(N = 3)\nout Y: f32[N]\nout I: i32[N]\n\nfor i in 0..N:\n"
              "  local t: f32\n  local u: i32\n  Y[i] = t\n  t = 1\n  I[i] = u\n  u = 5\n", "t")
    for vec in (True, False):
        out = interp.run(p, {}, vectorize=vec)
        assert np.all(np.isnan(out["Y"]))
        assert np.all(out["I"] == np.iinfo(np.int32).min)


def test_out_arrays_start_uninitialised():
    p = kernel("kernel t(N = 5)\nout Y: f64[N]\nout I: i64[N]\n\nfor i in 0..2:\n"
               "  Y[i] = 1\n  I[i] = 2\n")
    out = run_both(p, {})
    assert list(out["Y"][:2]) == [1, 1] and np.all(np.isnan(out["Y"][2:]))
    assert np.all(out["I"][2:] == np.iinfo(np.int64).min)


def test_prefix_sum_recurrence_is_sequential():
    p = kernel(kernel_text("t(N = 50)", "in X: f32[N]; inout A: f32[N]", """\
for i in 1..N:
  A[i] = A[i - 1] + X[i]
"""))
    X, A = f32(50), f32(50)
    got = run_both(p, {"X": X, "A": A})["A"]
    want = A.copy()
    for i in range(1, 50):
        want[i] = want[i - 1] + X[i]
    assert same(got, want)
    assert "rt.expand" not in interp.source(p) and "_set" not in interp.source(p)


def test_scalar_recurrence_in_a_loop_is_sequential():
    p = kernel("kernel t(N = 30)\nin X: f64[N]\nout Y: f64[N]\n\nfor i in 0..N:\n"
               "  local t: f64\n  t = 1\n  for j in 0..N:\n    t = t * 0.5 + X[j]\n    Y[j] = t\n")
    X = RNG.normal(size=30)
    Y = run_both(p, {"X": X})["Y"]
    t, want = 1.0, []
    for j in range(30):
        t = t * 0.5 + X[j]
        want.append(t)
    assert same(Y, np.array(want))


def test_non_injective_writes_keep_the_last_value():
    p = kernel(kernel_text("t(N = 8, M = 40)",
                           "in X: f32[N, M]; out Y: f32[M]; out H: f32[M]; out S: f32[M]", """\
for i in 0..N:
  for j in 0..M:
    Y[j] = X[i, j]
for k in 0..M:
  H[k // 2] = X[0, k]
for l in 0..M:
  S[l] = 0
for a in 0..N:
  for b in 0..M:
    S[b // 4] += X[a, b]
"""))
    X = f32(8, 40)
    out = run_both(p, {"X": X})
    assert same(out["Y"], X[-1])
    assert same(out["H"][:20], X[0, 1::2])
    S = np.zeros(40, np.float32)
    for a in range(8):
        for b in range(40):
            S[b // 4] += X[a, b]
    assert same(out["S"], S)


def test_runtime_injectivity_check_takes_both_branches():
    p = kernel(kernel_text("t(N = 7, M = 8)", "in X: f32[N, M]; out Z: f32[N, M]", """\
for i in 0..N:
  for k in 0..M:
    Z[i, k] = 0
  for j in 0..min(i, M):
    Z[i, (j + i) // 2] = X[i, j]
"""))
    X = f32(7, 8)
    Z = run_both(p, {"X": X})["Z"]
    want = np.zeros((7, 8), np.float32)
    for i in range(7):
        for j in range(min(i, 8)):
            want[i, (j + i) // 2] = X[i, j]
    assert same(Z, want)
    assert "rt.injective" in interp.source(p)


def test_locals_of_an_innermost_body_are_privatised_per_point():
    p = kernel(kernel_text("t(N = 24, K = 40)", "in A: f32[N, K]; in B: f32[K]; out C: f32[N]", """\
for i in 0..N:
  C[i] = 0
  for k in 0..K:
    local Bt: f32
    local pair: f32[2]
    Bt = B[k]
    pair[0] = A[i, k]
    pair[1] = pair[0] * Bt
    C[i] += pair[1]
"""))
    A, B = f32(24, 40), f32(40)
    C = run_both(p, {"A": A, "B": B})["C"]
    want = np.zeros(24, np.float32)
    for k in range(40):
        want += A[:, k] * B[k]
    assert same(C, want)
    assert "_p = np.arange" in interp.source(p)


def test_names_that_look_like_generated_ones():
    p = kernel(kernel_text("t(N = 20)",
                           "in n: f32[N]; out p: f32[N]; out ok: f32[N]; out it: f32", """\
it = 0
for np in 0..N:
  p[np] = n[np] * 2
  ok[np] = p[np] + 1
for rt in 0..N:
  it += n[rt]
"""))
    X = f32(20)
    out = run_both(p, {"n": X})
    assert same(out["p"], X * 2) and same(out["ok"], X * 2 + np.float32(1))
    total = np.float32(0)
    for v in X:
        total += v
    assert same(out["it"], np.asarray(total))


def test_f16_reductions_round_at_every_step():
    p = kernel("kernel t(N = 8, M = 300)\nin X: f16[N, M]\nout S: f16[N]\n\n"
               "for i in 0..N:\n  S[i] = 0\nfor a in 0..N:\n  for b in 0..M:\n"
               "    S[a] += X[a, b] * 3\n")
    X = f32(8, 300).astype(np.float16)
    S = run_both(p, {"X": X})["S"]
    want = np.zeros(8, np.float16)
    for b in range(300):
        want += X[:, b] * np.float16(3)
    assert same(S, want)
    assert ".at(" in interp.source(p)


def test_elementwise_update_reading_its_own_target():
    p = kernel("kernel t(N = 33, M = 9)\ninout A: f64[N, M]\n\nfor i in 0..N:\n"
               "  for j in 0..M:\n    A[i, j] = A[i, j] * A[i, j] - j\n")
    A = RNG.normal(size=(33, 9))
    assert same(run_both(p, {"A": A})["A"], A * A - np.arange(9))


def test_deep_nests_beyond_python_block_limit():
    depth = 24
    lines = ["kernel t(N = 2)", "inout A: f64[N]", ""]
    for d in range(depth):
        lines.append("  " * d + f"for i{d} in 0..{'N' if d in (0, depth - 1) else 1}:")
    lines.append("  " * depth + "A[i0] += A[i%d] * 0.5" % (depth - 1))
    p = kernel("\n".join(lines) + "\n")
    A = np.array([1.0, 2.0])
    got = run_both(p, {"A": A})["A"]
    want = A.copy()
    import itertools
    for idx in itertools.product(range(2), *[range(1)] * (depth - 2), range(2)):
        want[idx[0]] += want[idx[-1]] * 0.5
    assert same(got, want)


def test_huge_iteration_sets_fall_back_to_loops(monkeypatch):
    monkeypatch.setattr(rt, "MAX_POINTS", 50)
    p = kernel("kernel t(N = 13, M = 11)\nin X: f32[N, M]\nout Y: f32[N, M]\n\n"
               "for i in 0..N:\n  for j in 0..M:\n    Y[i, j] = X[i, j] + 1\n"
               "for o in 0..2:\n  for a in 0..N:\n    for b in 0..min(a + o, M):\n"
               "      Y[a, b] = 2 * X[a, b] + o\n")
    X = f32(13, 11)
    Y = run_both(p, {"X": X})["Y"]
    want = X + np.float32(1)
    lower = np.tril(np.ones((13, 11), bool))
    want[lower] = (2 * X + np.float32(1))[lower]
    assert same(Y, want)
    assert "_it is not None" in interp.source(p)


def test_large_fixed_iteration_sets_are_built_at_run_time(monkeypatch):
    monkeypatch.setattr(interp_codegen, "PRECOMPUTED_POINTS", 20)
    interp._compile.cache_clear()
    p = kernel("kernel t(N = 9, M = 7)\nin X: f32[N, M]\nout Y: f32[N, M]\nout Z: f32[M]\n\n"
               "for i in 0..N:\n  for j in 0..M:\n    Y[i, j] = X[i, j] * X[i, j]\n"
               "for a in 0..M:\n  Z[a] = 0\n"
               "for b in 0..N:\n  for c in 0..M:\n    Z[(c + 1) // 2] = X[b, c]\n")
    X = f32(9, 7)
    out = run_both(p, {"X": X})
    want = np.zeros(7, np.float32)
    for c in range(7):
        want[(c + 1) // 2] = X[8, c]
    assert same(out["Y"], X * X) and same(out["Z"], want)
    source = interp.source(p)
    assert "_set" not in source and "_memo" in source
    interp._compile.cache_clear()


# ----------------------------------------------------------------------------- inputs / outputs

SCALE = kernel_text("t(N = 4)",
                    "in X: f32[N]; in a: f32; in k: i32; inout A: f64[N]; out Y: f32[N]; "
                    "out I: i32[N]", """\
for i in 0..N:
  Y[i] = X[i] * a + 3
  I[i] = k + i
  A[i] += 1
""")


def test_scalar_inputs_accept_python_numbers_and_0d_arrays():
    p = kernel(SCALE)
    X, A = f32(4), RNG.normal(size=4)
    for a, k in ((2.0, 3), (np.array(2.0, np.float32), np.array(3, np.int32)),
                 (np.float32(2.0), np.int32(3)), (2, 3.0)):
        out = interp.run(p, {"X": X, "a": a, "k": k, "A": A})
        assert same(out["Y"], X * np.float32(2) + np.float32(3))
        assert same(out["I"], np.arange(3, 7, dtype=np.int32))


def test_inputs_are_not_mutated_and_outputs_are_fresh():
    p = kernel(SCALE)
    X, A = f32(4), RNG.normal(size=4)
    inputs = {"X": X, "a": 2.0, "k": 1, "A": A}
    frozen = {"X": X.copy(), "A": A.copy()}
    first = interp.run(p, inputs)
    second = interp.run(p, inputs, vectorize=False)
    assert same(X, frozen["X"]) and same(A, frozen["A"])
    assert same(first["A"], A + 1) and set(first) == {"A", "Y", "I"}
    for name in first:
        assert not np.shares_memory(first[name], second[name])
        assert not any(np.shares_memory(first[name], v) for v in (X, A))
        assert first[name].flags.writeable


def test_bad_inputs_are_refused_with_clear_messages():
    p = kernel(SCALE)
    good = {"X": f32(4), "a": 1.0, "k": 1, "A": np.zeros(4)}
    cases = [
        ({k: v for k, v in good.items() if k != "X"}, "missing input 'X'"),
        ({**good, "X": f32(5)}, "shape"),
        ({**good, "X": f32(4).astype(np.float64)}, "dtype float64"),
        ({**good, "A": np.zeros(4, np.float32)}, "dtype float32"),
        ({**good, "k": 1.5}, "not an integer"),
        ({**good, "X": [1.0, 2.0, 3.0, 4.0]}, "numpy array"),
        ({**good, "X": 1.0}, "Python number"),
        ({**good, "Q": 1.0}, "unknown input 'Q'"),
        ({**good, "Y": f32(4)}, "'Y' is declared out"),
    ]
    for inputs, message in cases:
        with pytest.raises(ValueError, match=message):
            interp.run(p, inputs)


# ----------------------------------------------------------------------------- speed

def test_library_sized_kernels_run_fast():
    from dojo_core import kernels as K
    for name, sizes in (("matmul", dict(N=64, M=64, K=64)),
                        ("conv2d", dict(N=1, C=8, H=16, W=16, F=8)),
                        ("attention", dict(S=64, D=32))):
        program = K.load_kernel(name, sizes)
        inputs = K.random_inputs(program, seed=0)
        start = time.perf_counter()
        got = interp.run(program, inputs)
        elapsed = time.perf_counter() - start
        want = K.reference(name, inputs, program.size_values)
        for arr in want:
            np.testing.assert_allclose(got[arr], want[arr], rtol=1e-4, atol=1e-4)
        assert elapsed < 2.0, f"{name}: {elapsed:.2f}s"

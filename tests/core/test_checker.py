"""The checker (DESIGN.md section 3): one test per error class, each asserting the exact
`FILE:LINE:COL: message` lines; valid programs that must pass; and properties over random
valid programs (tests/strategies.py): they all check clean, and shifting a full-range
access by one gives exactly one out-of-bounds error, located at that access."""
from __future__ import annotations

import dataclasses
from functools import partial

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dojo_core import ir
from dojo_core.checker import check
from dojo_core.parser import parse
from dojo_core.poly import const_value
from dojo_core.printer import print_expr, print_program

try:
    from strategies import programs
except ImportError:  # tests/ imported as a package
    from tests.strategies import programs

FILE = "f.dojo"
VEC = "in  A: f32[N]\nout B: f32[N]\n"


def kernel(body: str, decls: str = VEC, sizes: str = "N = 8") -> str:
    """A kernel whose declarations start at line 2; the body follows one blank line."""
    return f"kernel k({sizes})\n{decls}\n{body}"


def errors(src: str) -> list:
    return [str(e) for e in check(parse(src, FILE), FILE)]


def assert_errors(body: str, *expected: str, decls: str = VEC, sizes: str = "N = 8"):
    """The kernel of body (see kernel) has exactly the expected error lines, in this order."""
    assert errors(kernel(body, decls, sizes)) == list(expected)


def fast(n: int):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- names and scopes

def test_unknown_name_in_a_value():
    assert_errors("for i in 0..N:\n  B[i] = A[i] * q\n", "f.dojo:6:17: unknown name 'q'")


def test_unknown_name_in_an_index_and_a_bound():
    assert_errors("for i in 0..N:\n  B[i] = A[j]\n", "f.dojo:6:12: unknown name 'j'")
    assert_errors("for i in 0..Q:\n  B[i] = A[i]\n", "f.dojo:5:13: unknown name 'Q'")
    # an iterator is not in scope in its own bounds
    assert_errors("for i in 0..i:\n  B[i] = 1\n", "f.dojo:5:13: unknown name 'i'")


def test_unknown_array():
    assert_errors("for i in 0..N:\n  B[i] = Z[i]\n", "f.dojo:6:10: unknown array 'Z'")
    assert_errors("for i in 0..N:\n  Z[i] = A[i]\n", "f.dojo:6:3: unknown array 'Z'")
    # iterators and sizes are not arrays
    assert_errors("for i in 0..N:\n  i = 1\n", "f.dojo:6:3: unknown array 'i'")
    assert_errors("N = 1\n", "f.dojo:5:1: unknown array 'N'")


def test_local_out_of_scope():
    assert_errors("for i in 0..N:\n  local t: f32[N]\n  t[i] = A[i]\n"
                  "for j in 0..N:\n  B[j] = t[j]\n",
                  "f.dojo:9:10: local 't' is not in scope here")
    assert_errors("for i in 0..N:\n  local s: f32\n  s = A[i]\nfor j in 0..N:\n  B[j] = s\n",
                  "f.dojo:9:10: local 's' is not in scope here")


def test_iterator_out_of_scope():
    assert_errors("for i in 0..N:\n  B[i] = A[i]\nB[0] = i\n",
                  "f.dojo:7:8: iterator 'i' is not in scope here")


def test_iterator_out_of_scope_in_an_index():
    assert_errors("for i in 0..N:\n  B[i] = A[i]\nB[0] = A[i]\n",
                  "f.dojo:7:10: iterator 'i' is not in scope here")


def test_duplicate_name():
    assert_errors("A[0] = 1\n", "f.dojo:3:1: duplicate name 'A' (first declared at 2:1)",
                  decls="in  A: f32[N]\nout A: f32[N]\n")
    assert_errors("B[0] = 1\n", "f.dojo:2:1: duplicate name 'N' (first declared at 1:8)",
                  decls="in  N: f32[4]\nout B: f32[4]\n")
    assert_errors("for i in 0..N:\n  B[i] = A[i]\nfor i in 0..N:\n  B[i] += A[i]\n",
                  "f.dojo:7:1: duplicate name 'i' (first declared at 5:1)")
    assert_errors("for i in 0..N:\n  local t: f32\n  t = 1\n  B[i] = t\n"
                  "for j in 0..N:\n  local t: f32\n  t = 2\n  B[j] += t\n",
                  "f.dojo:10:3: duplicate name 't' (first declared at 6:3)")


# ----------------------------------------------------------------------------- shapes

def test_rank_mismatch():
    assert_errors("for i in 0..N:\n  B[i] = A[i, 0]\n",
                  "f.dojo:6:10: 'A' has rank 1 but is indexed with 2 indices")
    assert_errors("for i in 0..N:\n  B[i, i] = A[i]\n",
                  "f.dojo:6:3: 'B' has rank 1 but is indexed with 2 indices")
    assert_errors("B[0] = s[0]\n", "f.dojo:5:8: 's' has rank 0 but is indexed with 1 index",
                  decls="in  s: f32\nout B: f32[N]\n")


def test_bare_array_without_indices():
    assert_errors("for i in 0..N:\n  B[i] = A\n", "f.dojo:6:10: 'A' has rank 1: index it as A[...]")
    assert_errors("B = 1\n", "f.dojo:5:1: 'B' has rank 1 but is indexed with 0 indices")


# ----------------------------------------------------------------------------- dtypes

def test_dtype_mismatch_between_operands():
    expect_errors = partial(assert_errors, decls="in  A: f32[N]\nin  I: i32[N]\nout B: f32[N]\n")
    expect_errors("for i in 0..N:\n  B[i] = A[i] + I[i]\n",
                  "f.dojo:7:15: dtype mismatch: f32 and i32")
    expect_errors("B[0] = select(A[0] < I[0], 1.0, 0.0)\n",
                  "f.dojo:6:15: dtype mismatch: f32 and i32")
    expect_errors("B[0] = select(A[0] < 1, A[0], I[0])\n",
                  "f.dojo:6:8: dtype mismatch: f32 and i32")


def test_storing_wrong_dtype():
    assert_errors("for i in 0..N:\n  B[i] = A[i]\n",
                  "f.dojo:6:10: dtype mismatch: storing f64 into 'B' of dtype f32",
                  decls="in  A: f64[N]\nout B: f32[N]\n")
    assert_errors("B[0] = A[0] + 1.0\n",
                  "f.dojo:5:13: dtype mismatch: storing f16 into 'B' of dtype f32",
                  decls="in  A: f16[N]\nout B: f32[N]\n")
    assert_errors("B[0] = A[0]\n", "f.dojo:5:8: dtype mismatch: storing i64 into 'B' of dtype i32",
                  decls="in  A: i64[N]\nout B: i32[N]\n")


def test_float_into_int_array():
    expect_errors = partial(assert_errors, decls="in  A: i32[N]\nout B: i32[N]\n")
    expect_errors("for i in 0..N:\n  B[i] = 1.5\n",
                  "f.dojo:6:10: dtype mismatch: storing a float into 'B' of dtype i32")
    expect_errors("B[0] = inf\n",
                  "f.dojo:5:8: dtype mismatch: storing a float into 'B' of dtype i32")
    expect_errors("for i in 0..N:\n  B[i] = A[i] * 0.5\n",
                  "f.dojo:6:15: dtype mismatch: a float constant with i32")


def test_comparison_used_as_value():
    assert_errors("for i in 0..N:\n  B[i] = A[i] > 0\n",
                  "f.dojo:6:10: a comparison is not a value: use select(cond, a, b)")
    assert_errors("for i in 0..N:\n  B[i] = (A[i] > 0) + 1\n",
                  "f.dojo:6:21: a comparison is not a number: use select(cond, a, b)")
    assert_errors("for i in 0..N:\n  B[i] = -(A[i] > 0)\n",
                  "f.dojo:6:10: cannot negate a comparison")
    assert_errors("for i in 0..N:\n  B[i] = pow(A[i] > 0, 2.0)\n",
                  "f.dojo:6:10: a comparison is not a number: use select(cond, a, b)")
    assert_errors("B[0] = select((A[0] < A[1]) == (A[1] < A[2]), 1.0, 0.0)\n",
                  "f.dojo:5:15: a comparison is not a number: use select(cond, a, b)")


def test_comparison_inside_a_float_function():
    assert_errors("for i in 0..N:\n  B[i] = exp(A[i] > 0)\n",
                  "f.dojo:6:10: a comparison is not a number: use select(cond, a, b)")


def test_abs_of_a_comparison_is_not_a_condition():
    assert errors(kernel("B[0] = select(abs(A[0] > 0), 1.0, 2.0)\n")) != []


def test_select_without_comparison():
    assert_errors("for i in 0..N:\n  B[i] = select(A[i], 1.0, 0.0)\n",
                  "f.dojo:6:10: select() needs a comparison as its first argument")


def test_floor_division_and_modulo_on_floats():
    assert_errors("for i in 0..N:\n  B[i] = A[i] // 2\n",
                  "f.dojo:6:15: '//' needs integer operands, got f32")
    assert_errors("for i in 0..N:\n  B[i] = A[i] % 2\n",
                  "f.dojo:6:15: '%' needs integer operands, got f32")


def test_true_division_on_integers():
    """'/' is true division: on integers its result is a float, which an integer array
    cannot store (use '//'); into a float array it is fine."""
    expect_errors = partial(assert_errors, decls="in  A: i32[N]\nout B: i32[N]\n")
    expect_errors("for i in 0..N:\n  B[i] = A[i] / 2\n",
                  "f.dojo:6:15: dtype mismatch: storing a float into 'B' of dtype i32")
    expect_errors("for i in 0..N:\n  B[i] = A[i] // 2\n")
    assert_errors("for i in 0..N:\n  B[i] = i / 2\n")
    expect_errors("for i in 0..N:\n  B[i] = A[i] + 1 / 2\n",
                  "f.dojo:6:15: dtype mismatch: a float constant with i32")


def test_float_function_on_integers():
    assert_errors("for i in 0..N:\n  B[i] = exp(A[i])\n",
                  "f.dojo:6:10: exp() needs a float argument, got i32",
                  decls="in  A: i32[N]\nout B: f32[N]\n")
    assert_errors("for i in 0..N:\n  B[i] = pow(A[i], 2)\n",
                  "f.dojo:6:10: pow() needs a float argument, got i32",
                  decls="in  A: i32[N]\nout B: i32[N]\n")


def test_i8_is_promoted():
    """i8 values promote (C's integer promotion): they mix with i32 and i64, an i8 product
    stores into an i32 (or i64) array, and an i8 array takes i32 values (wrapped); i64
    values into i8, floats with i8 and i8 with floats stay errors."""
    expect_errors = partial(assert_errors, decls="in  A: i8[N]\nin  B: i8[N]\nout C: i32[N]\n"
                                                 "out D: i8[N]\nout E: i64[N]\nout F: f32[N]\n")
    expect_errors("for i in 0..N:\n  C[i] = 0\n  C[i] += A[i] * B[i]\n  D[i] = A[i] * B[i] + C[i]\n"
                  "  E[i] = A[i] * B[i] * 3 - i\n  D[i] max= select(A[i] < C[i], -A[i], abs(B[i]))\n"
                  "  C[i] = A[i] // 2 + B[i] % 3\n")
    expect_errors("for i in 0..N:\n  D[i] = E[i]\n",
                  "f.dojo:10:10: dtype mismatch: storing i64 into 'D' of dtype i8")
    expect_errors("for i in 0..N:\n  F[i] = A[i]\n",
                  "f.dojo:10:10: dtype mismatch: storing i8 into 'F' of dtype f32")
    expect_errors("for i in 0..N:\n  D[i] = A[i] * 0.5\n",
                  "f.dojo:10:15: dtype mismatch: a float constant with i8")
    expect_errors("for i in 0..N:\n  F[i] = F[i] + A[i]\n",
                  "f.dojo:10:15: dtype mismatch: f32 and i8")
    expect_errors("for i in 0..N:\n  D[i] = exp(A[i])\n",
                  "f.dojo:10:10: exp() needs a float argument, got i8")


# ----------------------------------------------------------------------------- writes to inputs

def test_write_to_in_array():
    assert_errors("for i in 0..N:\n  A[i] = 1\n  B[i] = A[i]\n",
                  "f.dojo:6:3: cannot write to 'A': it is declared 'in'")
    assert_errors("s = 1\nB[0] = s\n", "f.dojo:5:1: cannot write to 's': it is declared 'in'",
                  decls="in  s: f32\nout B: f32[N]\n")


# ----------------------------------------------------------------------------- affinity

MAT = "in  A: f32[N, N]\nout B: f32[N]\n"


def test_non_affine_index_product_of_iterators():
    assert_errors("for i in 0..N:\n  for j in 0..N:\n    B[i] = A[i * j, j]\n",
                  "f.dojo:7:16: non-affine index 'i * j': a product of two iterator expressions is not affine",
                  decls=MAT)
    assert_errors("for i in 0..N:\n  for j in 0..i * i:\n    B[i] = A[i, 0]\n",
                  "f.dojo:6:17: non-affine bound 'i * i': a product of two iterator expressions is not affine",
                  decls=MAT)


def test_indirect_index():
    decls = "in  A: f32[N]\nin  I: i32[N]\nout B: f32[N]\n"
    assert_errors("for i in 0..N:\n  B[i] = A[I[i]]\n",
                  "f.dojo:7:12: non-affine index 'I[i]': array element 'I[...]' in an index or bound "
                  "is not affine (indirect indexing is not supported)", decls=decls)
    # a scalar (array or local) is data too, not an affine quantity
    assert_errors("B[0] = A[s]\n",
                  "f.dojo:6:10: non-affine index 's': array element 's[...]' in an index or bound "
                  "is not affine (indirect indexing is not supported)", decls="in  s: i32\n" + VEC)
    assert_errors("for i in 0..A[0]:\n  B[i] = 1\n",
                  "f.dojo:5:13: non-affine bound 'A[0]': array element 'A[...]' in an index or bound "
                  "is not affine (indirect indexing is not supported)")


def test_non_constant_divisor():
    assert_errors("for i in 0..N:\n  for j in 1..N:\n    B[i] = A[i // j]\n",
                  "f.dojo:7:16: non-affine index 'i // j': '//' needs a constant divisor")
    assert_errors("for i in 0..N:\n  for j in 1..N:\n    B[i] = A[i % j]\n",
                  "f.dojo:7:16: non-affine index 'i % j': '%' needs a constant divisor")
    assert_errors("for i in 0..N:\n  B[i] = A[i // 0]\n",
                  "f.dojo:6:14: non-affine index 'i // 0': '//' needs a positive divisor, got 0")
    assert_errors("for i in 0..N:\n  B[i] = A[i % -2]\n",
                  "f.dojo:6:14: non-affine index 'i % -2': '%' needs a positive divisor, got -2")


def test_min_in_an_index():
    assert_errors("for i in 0..N:\n  B[i] = A[min(i, N - 1)]\n",
                  "f.dojo:6:12: non-affine index 'min(i, N - 1)': min() is not allowed in an index "
                  "(min/max only in loop bounds)")


def test_other_non_affine_indices_and_bounds():
    assert_errors("for i in 0..N:\n  B[i] = A[1.0]\n",
                  "f.dojo:6:12: non-affine index '1.0': a float constant in an index or bound")
    assert_errors("for i in 0..N:\n  B[i] = A[i / 2]\n",
                  "f.dojo:6:14: non-affine index 'i / 2': operator '/' is not allowed in an index or bound")
    assert_errors("for i in 0..N / 2:\n  B[i] = 1\n",
                  "f.dojo:5:15: non-affine bound 'N / 2': operator '/' is not allowed in an index or bound")


# ----------------------------------------------------------------------------- sizes and dims

def test_non_positive_size():
    # sizes carry no location of their own: the error is at the kernel's name
    assert_errors("B[0] = 1\n", "f.dojo:1:8: size M must be at least 1, got 0",
                  decls="in  A: f32[4]\nout B: f32[4]\n", sizes="N = 8, M = 0")


def test_non_positive_dimension():
    assert_errors("B[0] = 1\n",
                  "f.dojo:2:14: dimension 'N - 8' is 0 at these sizes; it must be at least 1",
                  decls="in  A: f32[N - 8]\nout B: f32[N]\n")
    assert_errors("local t: f32[N - 9]\nB[0] = 1\n",
                  "f.dojo:5:16: dimension 'N - 9' is -1 at these sizes; it must be at least 1")
    assert_errors("B[0] = 1\n",
                  "f.dojo:2:14: dimension 'N * 1.5' must be an integer expression of sizes and constants",
                  decls="in  A: f32[N * 1.5]\nout B: f32[N]\n")
    assert_errors("for i in 0..N:\n  local t: f32[N - i]\n  B[i] = 1\n",
                  "f.dojo:6:18: dimension 'N - i' must be an integer expression of sizes and constants")


# ----------------------------------------------------------------------------- bounds

def test_out_of_bounds_plain_offset():
    assert_errors("for i in 0..N:\n  B[i] = A[i + 1]\n",
                  "f.dojo:6:10: A[i + 1] can be out of bounds: i + 1 = 8, outside 0..8 (dimension 0) (e.g. at i = 7)")
    assert_errors("for i in 0..N:\n  B[i + 1] = A[i]\n",
                  "f.dojo:6:3: B[i + 1] can be out of bounds: i + 1 = 8, outside 0..8 (dimension 0) (e.g. at i = 7)")


def test_out_of_bounds_split_without_tail():
    body = "for i0 in 0..(N + 3) // 4:\n  for i1 in 0..4:\n    B[4*i0 + i1] = A[4*i0 + i1]\n"
    assert_errors(body,
                  "f.dojo:7:5: B[4*i0 + i1] can be out of bounds: 4*i0 + i1 = 10, outside 0..10 (dimension 0) "
                  "(e.g. at i0 = 2, i1 = 2)",
                  "f.dojo:7:20: A[4*i0 + i1] can be out of bounds: 4*i0 + i1 = 10, outside 0..10 (dimension 0) "
                  "(e.g. at i0 = 2, i1 = 2)", sizes="N = 10")
    # ... but fine at a size the factor divides
    assert_errors(body, sizes="N = 12")


def test_out_of_bounds_upper_bound_off_by_one():
    assert_errors("for i in 0..N + 1:\n  B[i] = 1\n",
                  "f.dojo:6:3: B[i] can be out of bounds: i = 8, outside 0..8 (dimension 0) (e.g. at i = 8)")
    assert_errors("for i in 0..min(N + 1, 12):\n  B[i] = 1\n",
                  "f.dojo:6:3: B[i] can be out of bounds: i = 10, outside 0..10 (dimension 0) (e.g. at i = 10)",
                  sizes="N = 10")


def test_out_of_bounds_negative_index():
    assert_errors("for i in 0..N:\n  B[i] = A[i - 1]\n",
                  "f.dojo:6:10: A[i - 1] can be out of bounds: i - 1 = -1, outside 0..8 (dimension 0) (e.g. at i = 0)")


def test_out_of_bounds_second_dimension_and_constant():
    assert_errors("for i in 0..N:\n  for j in 0..N:\n    B[i] = A[j, N - j]\n",
                  "f.dojo:7:12: A[j, N - j] can be out of bounds: N - j = 8, outside 0..8 (dimension 1) "
                  "(e.g. at i = 0, j = 0)", decls=MAT)
    assert_errors("B[N] = 1\n",
                  "f.dojo:5:1: B[N] can be out of bounds: N = 8, outside 0..8 (dimension 0)")


def test_empty_loops_are_never_out_of_bounds():
    assert_errors("for i in N..0:\n  B[i + 100] = 1\n")
    assert_errors("for i in 1..1:\n  B[i - 100] = 1\n")


# ----------------------------------------------------------------------------- read before write

def test_read_of_out_before_write_reduction_without_init():
    assert_errors("for i in 0..N:\n  B[i] += A[i]\n",
                  "f.dojo:6:3: B[i] is read before it is written (e.g. at i = 0)")
    assert_errors("for i in 0..N:\n  B[i] = B[i] + 1\n",
                  "f.dojo:6:10: B[i] is read before it is written (e.g. at i = 0)")


def test_read_of_out_before_write_partial_init():
    assert_errors("for i in 0..N - 1:\n  B[i] = 0\nfor i2 in 0..N:\n  B[i2] += A[i2]\n",
                  "f.dojo:8:3: B[i2] is read before it is written (e.g. at i2 = 7)")


def test_read_of_out_before_write_wrong_order():
    assert_errors("for i in 0..N:\n  B[i] += A[i]\nfor j in 0..N:\n  B[j] = 0\n",
                  "f.dojo:6:3: B[i] is read before it is written (e.g. at i = 0)")
    assert_errors("for i in 0..N:\n  B[i] = 0\n  B[i] += B[(i + 1) % N]\n",
                  "f.dojo:7:11: B[(i + 1) % N] is read before it is written (e.g. at i = 0)")
    assert_errors("B[0] = s\ns = 1\n", "f.dojo:5:8: s is read before it is written",
                  decls="out s: f32\nout B: f32[N]\n")


def test_read_of_local_before_write():
    assert_errors("for i in 0..N:\n  local t: f32[N]\n  for j in 0..N:\n    B[j] = t[j]\n",
                  "f.dojo:8:12: t[j] is read before it is written (e.g. at i = 0, j = 0)")
    assert_errors("for i in 0..N:\n  local s: f32\n  s += A[i]\n  B[i] = s\n",
                  "f.dojo:7:3: s is read before it is written (e.g. at i = 0)")
    # a local lives in one instance of its block: a value from the previous iteration is gone
    assert_errors("for i in 0..N:\n  local s: f32\n  B[i] = select(i > 0, s, 0.0)\n  s = A[i]\n",
                  "f.dojo:7:24: s is read before it is written (e.g. at i = 0)")
    assert_errors("for i in 0..N:\n  local s: f32\n  for j in 0..1 - i:\n    s = 1\n  B[i] = s\n",
                  "f.dojo:9:10: s is read before it is written (e.g. at i = 1)")
    assert_errors("for i in 0..N:\n  local t: f32[N]\n  for j in 0..N - 1:\n    t[j] = 0\n"
                  "  for k in 0..N:\n    t[k] += 1\n  B[i] = t[0]\n",
                  "f.dojo:10:5: t[k] is read before it is written (e.g. at i = 0, k = 7)")


def test_read_of_temp_before_write():
    decls = "in  A: f32[N]\ntemp T: f32[N]\nout B: f32[N]\n"
    assert_errors("for i in 0..N:\n  B[i] = T[i] + A[i]\n",
                  "f.dojo:7:10: T[i] is read before it is written (e.g. at i = 0)", decls=decls)


def test_all_errors_are_reported_sorted_by_position():
    assert_errors("for i in 0..N:\n  B[i] = A[i] // 2\n  A[i] = q\n",
                  "f.dojo:6:15: '//' needs integer operands, got f32",
                  "f.dojo:7:3: cannot write to 'A': it is declared 'in'",
                  "f.dojo:7:10: unknown name 'q'")


# ----------------------------------------------------------------------------- valid programs

VALID = {
    "split-with-min-tail": (
        "for i0 in 0..(N + 3) // 4:\n  for i1 in 0..min(4, N - 4*i0):\n"
        "    B[4*i0 + i1] = A[4*i0 + i1]\n", VEC, "N = 10"),
    "local-written-in-inner-loop-then-read": (
        "for i in 0..N:\n  local t: f32[N] in stack\n  for j in 0..N:\n    t[j] = A[j]\n"
        "  for k in 0..N:\n    B[k] = t[N - 1 - k]\n", VEC, "N = 8"),
    "scalar-local-accumulator": (
        "for i in 0..N:\n  local s: f32 in register\n  s = 0\n  for j in 0..N:\n    s += A[j]\n"
        "  B[i] = s\n", VEC, "N = 8"),
    "inout-read-without-write": (
        "for i in 0..N:\n  B[i] = A[i]\n", "inout A: f32[N]\nout   B: f32[N]\n", "N = 8"),
    "inout-reduction": (
        "for i in 0..N:\n  A[i] += 1\n", "inout A: f32[N]\n", "N = 8"),
    "scalar-inputs": (
        "for i in 0..N:\n  B[i] = alpha * A[i] + beta\n",
        "in  alpha: f32\nin  beta: f32\nin  A: f32[N]\nout B: f32[N]\n", "N = 8"),
    "init-by-two-partial-writes": (
        "for i in 0..3:\n  B[i] = 0\nfor j in 3..N:\n  B[j] = 1\nfor k in 0..N:\n  B[k] += A[k]\n",
        VEC, "N = 8"),
    "temp-written-then-read": (
        "for i in 0..N:\n  T[i] = A[i] * 2\nfor j in 0..N:\n  B[j] = T[N - 1 - j]\n",
        "in  A: f32[N]\ntemp T: f32[N]\nout B: f32[N]\n", "N = 8"),
    "quasi-affine-indices-and-bounds": (
        "for i in 0..(N + 1) // 2:\n  for j in 0..2:\n    B[(2*i + j) % N] = A[(2*i + j) % N]\n"
        "for k in max(1, N - 20)..N:\n  B[k] max= A[k - 1]\n", VEC, "N = 7"),
    "integer-arithmetic": (
        "for i in 0..N:\n  B[i] = (A[i] + i) // 2 % 3 - max(A[i], -1)\n",
        "in  A: i32[N]\nout B: i32[N]\n", "N = 8"),
    "float-functions-and-select": (
        "for i in 0..N:\n  B[i] = select(A[i] > 0.5, exp(A[i]) / sqrt(N), -inf)\n"
        "  B[i] min= pow(tanh(A[i]), 2.0) + erf(i / 2.0) + rsqrt(1e-05) + abs(log(1.5))\n",
        VEC, "N = 8"),
    "empty-loop-reading-uninitialised-out": (
        "for i in N..N:\n  B[i] += 1\n", VEC, "N = 8"),
}


@pytest.mark.parametrize("body,decls,sizes", VALID.values(), ids=list(VALID))
def test_valid_program_passes(body, decls, sizes):
    assert_errors(body, decls=decls, sizes=sizes)


# Iterators named like i and i_w once collided in the ISL text of the read-before-write proof.
def test_iterator_names_ending_in_w_are_valid():
    assert_errors("for i in 0..N:\n  B[i] = A[i]\nfor i_w in 0..N:\n  B[i_w] += 1\n")


@settings(max_examples=40, deadline=None, phases=[Phase.generate], database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(max_depth=2, suffixed_iterators=True))
def test_generated_programs_with_suffixed_iterator_names_check_clean(program):
    text = print_program(program)
    assert check(parse(text, FILE), FILE) == [], text


# ----------------------------------------------------------------------------- properties

@fast(150)
@given(programs())
def test_generated_programs_check_clean(program):
    text = print_program(program)
    assert check(parse(text, FILE), FILE) == [], text


def _assign_paths(body, prefix=()):
    """(path, Assign) for every assignment, textual order; a path indexes nested bodies."""
    for k, stmt in enumerate(body):
        if isinstance(stmt, ir.Assign):
            yield prefix + (k,), stmt
        elif isinstance(stmt, ir.Loop):
            yield from _assign_paths(stmt.body, prefix + (k,))


def _at(body, path):
    node = body[path[0]]
    return node if len(path) == 1 else _at(node.body, path[1:])


def _replace(body, path, new):
    k = path[0]
    if len(path) == 1:
        repl = new
    else:
        repl = dataclasses.replace(body[k], body=_replace(body[k].body, path[1:], new))
    return body[:k] + (repl,) + body[k + 1:]


@fast(120)
@given(programs(), st.data())
def test_shifting_a_full_range_access_is_out_of_bounds_there(program, data):
    """The first write to an out/temp array is, by construction of programs(), a top-level
    nest covering every element; moving one index of it by +1 or -1 must be refused at
    exactly that access, with the out-of-range value it reaches."""
    produced = {d.name: d for d in program.arrays if d.kind in ("out", "temp") and d.dims}
    first = {}
    for path, stmt in _assign_paths(program.body):
        first.setdefault(stmt.target.array, path)
    candidates = [(first[n], n) for n in sorted(produced) if n in first]
    if not candidates:
        return
    path, name = data.draw(st.sampled_from(candidates))
    stmt = _at(program.body, path)
    dim = data.draw(st.integers(0, len(stmt.target.indices) - 1))
    step = data.draw(st.sampled_from([1, -1]))
    old = stmt.target.indices[dim]
    new_index = ir.BinOp("+" if step > 0 else "-", old, ir.Const(1))
    indices = stmt.target.indices[:dim] + (new_index,) + stmt.target.indices[dim + 1:]
    mutated = dataclasses.replace(
        program, body=_replace(program.body, path,
                               dataclasses.replace(stmt, target=ir.Access(name, indices))))
    parsed = parse(print_program(mutated), FILE)
    target = _at(parsed.body, path).target
    extent = const_value(produced[name].dims[dim], parsed.size_values)
    bad = extent if step > 0 else -1
    got = [str(e) for e in check(parsed, FILE)]
    assert len(got) == 1, got
    prefix = (f"{FILE}:{target.loc.line}:{target.loc.col}: {print_expr(target)} can be out of bounds: "
              f"{print_expr(new_index)} = {bad}, outside 0..{extent} (dimension {dim})")
    assert got[0].startswith(prefix), (got, prefix)

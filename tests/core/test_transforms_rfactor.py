"""rfactor: golden before/after text, one test per refusal reason, and partial sums that
give the untransformed kernel's outputs (interpreted and compiled), tails included."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import harness
from dojo_core.kernels import random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import actions

from kernels_text import kernel_text

from transform_checks import applied, assert_refused, assert_same_outputs

GEMV = kernel_text("gemv(N = 12, K = 40)", "in A: f32[N, K]; in x: f32[K]; out y: f32[N]", """\
for i in 0..N:
  y[i] = 0
  for k in 0..K:
    y[i] += A[i, k] * x[k]
""")

ROWMAX = kernel_text("rowmax(N = 6, K = 40)", "in A: f64[N, K]; out m: f64[N]", """\
for i in 0..N:
  m[i] = -inf
  for k in 0..K:
    m[i] max= A[i, k]
""")

IMAX = ROWMAX.replace("f64", "i32").replace("-inf", "-1000000")


steps = applied


def same_outputs(before, after):
    assert_same_outputs(before, after, seed=7)


def test_rfactor_golden():
    p = steps(GEMV, "split k by 16", "rfactor k1 as yr")
    body = print_program(p).split("\n\n", 1)[1]
    assert body == """\
for i in 0..N:
  y[i] = 0
  local yr: f32[16]
  for k1i in 0..16:
    yr[k1i] = 0.0
  for k0 in 0..(K + 15) // 16:
    for k1 in 0..min(16, K - 16*k0):
      yr[k1] += A[i, 16*k0 + k1] * x[16*k0 + k1]
  for k1r in 0..16:
    y[i] += yr[k1r]
"""
    same_outputs(parse(GEMV), p)


def test_the_partials_of_a_loop_not_starting_at_zero_count_from_its_start():
    """A reduction loop over 2..K + 2 has K slots, indexed k - 2 (indexed k, the last two
    lay past the local's end: found by a random walk on a generated program)."""
    shifted = GEMV.replace("for k in 0..K:", "for k in 2..K + 2:").replace(
        "A[i, k] * x[k]", "A[i, k - 2] * x[k - 2]")
    p = steps(shifted, "rfactor k as yr")
    text = print_program(p)
    assert "local yr: f32[40]" in text and "yr[k - 2] += A[i, k - 2] * x[k - 2]" in text
    same_outputs(parse(shifted), p)
    x = random_inputs(parse(shifted), 1)
    np.testing.assert_allclose(harness.run_c(p, x)["y"],
                               harness.run_c(parse(shifted), x)["y"], rtol=1e-5)


def test_rfactor_of_max_starts_from_minus_infinity():
    p = steps(ROWMAX, "split k by 8", "rfactor k1 as mr")
    assert "mr[k1i] = -inf" in print_program(p) and "m[i] max= mr[k1r]" in print_program(p)
    same_outputs(parse(ROWMAX), p)


@pytest.mark.parametrize("dtype,op,identity", [
    ("i32", "max=", "-2147483648"), ("i32", "min=", "2147483647"),
    ("i8", "max=", "-128"), ("i64", "min=", "9223372036854775807"),
    ("i64", "max=", "-9223372036854775808")])
def test_rfactor_of_an_integer_max_or_min_starts_from_the_types_bound(dtype, op, identity):
    source = IMAX.replace("i32", dtype).replace("-1000000", "0").replace("max=", op)
    p = steps(source, "split k by 8", "rfactor k1 as mr", "vectorize k1")
    assert f"mr[k1i] = {identity}\n" in print_program(p)
    assert print_program(parse(print_program(p))) == print_program(p)
    original = parse(source)
    result = harness.verify(p, original, random_inputs(original, 2), reference="interp")
    assert result["verified"], result


def test_rfactor_makes_the_lane_loop_vectorizable_as_plain_lanes():
    p = steps(GEMV, "split k by 16", "partition k0", "rfactor k1 as yr", "vectorize k1")
    assert "for k1 in 0..16 vector:" in print_program(p)
    original = parse(GEMV)
    result = harness.verify(p, original, random_inputs(original, 1), reference="interp")
    assert result["verified"], result


CHOLESKY_ROW = kernel_text("chol(N = 24)", "inout A: f64[N, N]", """\
for i in 0..N:
  for j in 0..i:
    for k in 0..j:
      A[i, j] += -A[i, k] * A[j, k]
    A[i, j] = A[i, j] / A[j, j]
""")


def test_rfactor_of_a_reduction_reading_other_elements_of_its_array():
    # A[i, k] and A[j, k] (k < j < i) are never the A[i, j] being reduced: exact, so the
    # partial sums are legal; outputs as before, the triangular tail included
    p = steps(CHOLESKY_ROW, "split k by 4", "partition k0", "rfactor k1 as P", "vectorize k1")
    text = print_program(p)
    assert "P[k1] += -A[i, 4*k0 + k1] * A[j, 4*k0 + k1]" in text and "A[i, j] += P[k1r]" in text
    original = parse(CHOLESKY_ROW)
    inputs = random_inputs(original, 2)
    inputs["A"] = inputs["A"] @ inputs["A"].T + 24 * np.eye(24)   # positive definite
    result = harness.verify(p, original, inputs, reference="interp")
    assert result["verified"], result


def test_rfactor_is_offered_with_a_free_name():
    p = steps(GEMV, "split k by 16")
    offered = [a.text for a in actions(p) if a.kind == "rfactor"]
    assert offered == ["rfactor k1 as yr"]


@pytest.mark.parametrize("source,prefix,step,reason", [
    (GEMV, (), "rfactor q as r", "there is no loop 'q'"),
    (GEMV, (), "rfactor i as r", "loop 'i' must hold exactly one reduction statement"),
    (GEMV, ("split k by 8", "vectorize k1"), "rfactor k1 as r",
     "loop 'k1' is annotated; rfactor before annotating"),
    ("kernel t(N = 8)\nin A: f32[N]\nout y: f32[N]\n\nfor i in 0..N:\n  y[i] = 0\n"
     "  for k in 0..N:\n    y[k] += A[i]\n", (), "rfactor k as r",
     "the target of the reduction varies with 'k'"),
    ("kernel t(N = 8)\ninout y: f32[N]\n\nfor i in 0..N:\n  for k in 0..N:\n"
     "    y[i] += y[i] * 2\n", (), "rfactor k as r",
     "the reduction's value reads elements of 'y' that the reduction updates"),
    ("kernel t(N = 8)\ninout A: f32[N, N]\n\nfor i in 0..N:\n  for j in 0..N:\n"
     "    for k in 0..N:\n      A[i, j] += A[i, k] * A[k, j]\n", (), "rfactor k as r",
     "the reduction's value reads elements of 'A' that the reduction updates"),
    (GEMV, (), "rfactor k as A", "the name 'A' is already taken"),
    (GEMV.replace("K = 40", "K = 5000"), (), "rfactor k as r",
     "loop 'k' has 5000 iterations; rfactor takes at most 4096"),
    (GEMV, (), "rfactor k r", "usage: rfactor LOOP as NAME"),
])
def test_refusal_reasons(source, prefix, step, reason):
    assert_refused(steps(source, *prefix), step, reason)

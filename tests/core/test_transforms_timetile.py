"""timetile: golden before/after text, one test per refusal reason, the exactness of its
legality check (an illegal tiling, applied anyway, computes something else), and outputs of
legal tilings (interpreted and compiled) against the untransformed stencil."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dojo_core import interp
from dojo_core.harness import run_c
from dojo_core.kernels import random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import REGISTRY, actions, apply_step, explain
from dojo_core.transforms.timetile import TIMETILE

from kernels_text import head, kernel_text, matmul_text
from transform_checks import applied, assert_refused, assert_same_outputs

JACOBI_1D = kernel_text("jacobi(T = 10, N = 40)", "inout A: f64[N]; inout B: f64[N]", """\
for t in 0..T:
  for i in 1..N - 1:
    B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
  for i2 in 1..N - 1:
    A[i2] = 0.33333 * (B[i2 - 1] + B[i2] + B[i2 + 1])
""")

JACOBI_2D = kernel_text("jacobi2(T = 7, N = 22)", "inout A: f64[N, N]; inout B: f64[N, N]", """\
for t in 0..T:
  for i in 1..N - 1:
    for j in 1..N - 1:
      B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
  for i2 in 1..N - 1:
    for j2 in 1..N - 1:
      A[i2, j2] = 0.2 * (B[i2, j2] + B[i2, j2 - 1] + B[i2, j2 + 1] + B[i2 + 1, j2] + B[i2 - 1, j2])
""")

IN_PLACE = kernel_text("smooth(T = 9, N = 37)", "inout A: f64[N]", """\
for t in 0..T:
  for i in 1..N - 1:
    A[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0
""")


def assert_compiled_outputs_same(before, after, seed=4):
    x = random_inputs(before, seed)
    want, got = interp.run(before, x), run_c(after, x)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_timetile_golden():
    p = applied(JACOBI_1D, "timetile t by 4 x 8 skew 2")
    assert print_program(p) == head(JACOBI_1D) + """\
for t0 in 0..(T + 3) // 4:
  for i0 in (8*t0 + 1) // 8..(N + 8*t0 + 5) // 8 + 1:
    for t in 4*t0..min(T, 4*t0 + 4):
      for i in max(1, 8*i0 - 2*t)..min(N - 1, 8*i0 - 2*t + 8):
        B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
      for i2 in max(1, 8*i0 - 2*t - 1)..min(N - 1, 8*i0 - 2*t + 7):
        A[i2] = 0.33333 * (B[i2 - 1] + B[i2] + B[i2 + 1])
"""
    assert_same_outputs(parse(JACOBI_1D), p)
    assert_compiled_outputs_same(parse(JACOBI_1D), p)


def test_two_levels_of_a_2d_stencil_are_tiled():
    p = applied(JACOBI_2D, "timetile t by 3 x 4 x 8 skew 2")
    text = print_program(p)
    assert "for j in max(1, 8*j0 - 2*t)..min(N - 1, 8*j0 - 2*t + 8):" in text
    assert "for j2 in max(1, 8*j0 - 2*t - 1)..min(N - 1, 8*j0 - 2*t + 7):" in text
    assert_same_outputs(parse(JACOBI_2D), p)
    assert_compiled_outputs_same(parse(JACOBI_2D), p)


def test_an_in_place_sweep_needs_only_skew_one():
    p = applied(IN_PLACE, "timetile t by 3 x 5 skew 1")
    assert_same_outputs(parse(IN_PLACE), p)
    assert_compiled_outputs_same(parse(IN_PLACE), p)


def test_the_legality_check_is_what_keeps_outputs():
    """Unskewed tiles of the in-place sweep read values a later tile has not yet written:
    refused, and applied anyway (apply alone) they compute something else."""
    program = parse(IN_PLACE)
    assert_refused(program, "timetile t by 3 x 5 skew 0", "no tiling of 't' by 3 x 5 with skew 0")
    wrong = TIMETILE.apply(program, ("t", 3, (5,), 0))
    x = random_inputs(program, 1)
    assert not np.allclose(interp.run(wrong, x)["A"], interp.run(program, x)["A"])


def test_two_sweeps_need_skew_two():
    program = parse(JACOBI_1D)
    assert_refused(program, "timetile t by 4 x 8 skew 1", "no tiling of 't' by 4 x 8 with skew 1")
    assert explain(program, "timetile t by 4 x 8 skew 2") is None


@pytest.mark.parametrize("step, reason", [
    ("timetile u by 4 x 8 skew 2", "there is no loop 'u'"),
    ("timetile t by 1 x 8 skew 2", "a tile must span at least 2 steps"),
    ("timetile t by 4 x 1 skew 2", "a tile must be at least 2 points wide"),
    ("timetile t by 4 x 8 x 8 x 8 x 8 skew 2", "at most 3 levels are tiled"),
    ("timetile t by 4 x 8 skew 9", "the skew factor must be in 0..8"),
    ("timetile t by 4 x 8 x 8 skew 2", "loop 'i' does not have 2 perfectly nested loops"),
    ("timetile i by 4 x 8 skew 2", "the body of 'i' must hold loops only"),
])
def test_refusals(step, reason):
    assert_refused(parse(JACOBI_1D), step, reason)


def test_refuses_annotated_loops():
    assert_refused(applied(JACOBI_1D, "vectorize i2"), "timetile t by 4 x 8 skew 2",
                   "annotated loops are not tiled")


def test_refuses_a_nest_whose_bounds_depend_on_the_time_loop():
    text = kernel_text("tri(T = 6, N = 20)", "inout A: f64[N]", """\
for t in 0..T:
  for i in t + 1..N:
    A[i] = A[i] + A[i - 1]
""")
    assert_refused(parse(text), "timetile t by 2 x 4 skew 1", "the bounds of 'i' depend on 't'")


def test_offered_on_time_loops_only_and_only_where_legal():
    offered = [a.text for a in actions(parse(JACOBI_1D)) if a.kind == "timetile"]
    assert offered == ["timetile t by 4 x 19 skew 2"]     # skew 1 is not legal here
    matmul = parse(matmul_text(16, 16, 16))
    assert REGISTRY["timetile"].enumerate(matmul) == []   # i indexes the arrays: no time loop


def test_round_trip_of_the_step_text():
    words = "t by 4 x 8 x 16 skew 2".split()
    assert TIMETILE.format(TIMETILE.parse(words)) == "timetile " + " ".join(words)
    with pytest.raises(Exception, match="usage: timetile"):
        TIMETILE.parse("t by 4 y 8 skew 2".split())


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.integers(2, 6), st.integers(2, 12), st.integers(0, 2),
       st.sampled_from([(JACOBI_1D, 2), (IN_PLACE, 1)]))
def test_every_tiling_with_enough_skew_is_legal_and_keeps_outputs(steps, width, extra, case):
    text, least = case
    program = parse(text)
    step = f"timetile t by {steps} x {width} skew {least + extra}"
    assert explain(program, step) is None
    assert_same_outputs(program, apply_step(program, step))

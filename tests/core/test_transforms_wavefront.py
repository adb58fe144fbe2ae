"""wavefront: golden before/after text, one test per refusal reason, the exactness of its
legality check (an illegal skew, applied anyway, computes something else), and outputs of
legal wavefronts (interpreted and compiled) against the untransformed sweep."""
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
from dojo_core.transforms import REGISTRY, apply_step, explain
from dojo_core.transforms.wavefront import WAVEFRONT

from kernels_text import head, kernel_text, matmul_text
from transform_checks import applied, assert_refused, assert_same_outputs

SEIDEL = kernel_text("seidel(T = 3, N = 11)", "inout A: f64[N, N]", """\
for t in 0..T:
  for i in 1..N - 1:
    for j in 1..N - 1:
      A[i, j] = (A[i - 1, j - 1] + A[i - 1, j + 1] + A[i, j - 1] + A[i, j] + A[i + 1, j] + A[i + 1, j + 1]) / 6.0
""")

FAR_READ = kernel_text("far(N = 9, M = 14)", "inout A: f64[N, M]", """\
for i in 1..N:
  for j in 0..M - 3:
    A[i, j] = A[i - 1, j + 3] + A[i, j]
""")


def assert_compiled_outputs_same(before, after, seed=4):
    x = random_inputs(before, seed)
    want, got = interp.run(before, x), run_c(after, x)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_wavefront_golden():
    p = applied(SEIDEL, "wavefront i j by 2")
    assert print_program(p) == head(SEIDEL) + """\
for t in 0..T:
  for w0 in 3..3*N - 5:
    for i in max(1, (w0 - N + 3) // 2)..min(N - 1, (w0 - 1) // 2 + 1):
      A[i, w0 - 2*i] = (A[i - 1, w0 - 2*i - 1] + A[i - 1, w0 - 2*i + 1] + A[i, w0 - 2*i - 1] + A[i, w0 - 2*i] + A[i + 1, w0 - 2*i] + A[i + 1, w0 - 2*i + 1]) / 6.0
"""
    assert_same_outputs(parse(SEIDEL), p)
    assert_compiled_outputs_same(parse(SEIDEL), p)


def test_factor_one_has_no_floor_division():
    p = applied(SEIDEL, "wavefront i j by 1")
    assert "for i in max(1, w0 - N + 2)..min(N - 1, w0):" in print_program(p)
    assert_same_outputs(parse(SEIDEL), p)
    assert_compiled_outputs_same(parse(SEIDEL), p)


def test_the_legality_check_is_what_keeps_outputs():
    """A point reading the new value three columns to its upper right needs F >= 3: smaller
    factors are refused, and applied anyway (apply alone) they compute something else."""
    program = parse(FAR_READ)
    x = random_inputs(program, 1)
    for factor in (1, 2):
        assert_refused(program, f"wavefront i j by {factor}",
                       "a dependence would run to an earlier wavefront")
        wrong = WAVEFRONT.apply(program, ("i", "j", factor))
        assert not np.allclose(interp.run(wrong, x)["A"], interp.run(program, x)["A"])
    assert explain(program, "wavefront i j by 3") is None
    assert_same_outputs(program, apply_step(program, "wavefront i j by 3"))


@pytest.mark.parametrize("step, reason", [
    ("wavefront i u by 2", "there is no loop 'u'"),
    ("wavefront t j by 2", "loops 't' and 'j' are not perfectly nested"),
    ("wavefront i j by 0", "the skew factor must be in 1..8"),
    ("wavefront i j by 9", "the skew factor must be in 1..8"),
])
def test_refusals(step, reason):
    assert_refused(parse(SEIDEL), step, reason)


def test_refuses_annotated_loops():
    assert_refused(applied(SEIDEL, "unroll j"), "wavefront i j by 2",
                   "annotated loops are not skewed")


def test_refuses_an_inner_loop_whose_bounds_depend_on_the_outer_one():
    text = kernel_text("tri(N = 12)", "inout A: f64[N, N]", """\
for i in 1..N:
  for j in i..N:
    A[i, j] = A[i - 1, j] + 1.0
""")
    assert_refused(parse(text), "wavefront i j by 1", "the bounds of 'j' depend on 'i'")


def test_usage_and_round_trip():
    words = "i j by 2".split()
    assert WAVEFRONT.format(WAVEFRONT.parse(words)) == "wavefront " + " ".join(words)
    with pytest.raises(Exception, match="usage: wavefront"):
        WAVEFRONT.parse("i j 2".split())


def test_offered_with_factors_one_and_two_where_legal():
    program = parse(SEIDEL)
    offered = REGISTRY["wavefront"].enumerate(program)
    assert offered == ["wavefront t i by 1", "wavefront t i by 2",     # time skewing too
                       "wavefront i j by 1", "wavefront i j by 2"]
    for step in offered:
        assert_same_outputs(program, apply_step(program, step))
    assert REGISTRY["wavefront"].enumerate(parse(FAR_READ)) == []   # needs 3
    matmul = parse(matmul_text(8, 8, 8))
    assert REGISTRY["wavefront"].enumerate(matmul) == ["wavefront i j by 1", "wavefront i j by 2"]


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.integers(3, 9), st.integers(3, 13), st.integers(0, 3), st.integers(0, 1))
def test_every_legal_wavefront_keeps_outputs(n, m, extra, shifted):
    """FAR_READ at other sizes (and with the loops starting elsewhere) with any factor from
    the least legal one up."""
    lo = 2 if shifted else 1
    text = kernel_text(f"far(N = {n}, M = {m})", "inout A: f64[N, M]", f"""\
for i in {lo}..N:
  for j in 0..M - 3:
    A[i, j] = A[i - 1, j + 3] + A[i, j]
""")
    program = parse(text)
    step = f"wavefront i j by {3 + extra}"
    assert explain(program, step) is None
    assert_same_outputs(program, apply_step(program, step))

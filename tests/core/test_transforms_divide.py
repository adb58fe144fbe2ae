"""divide T D by F: golden before/after text (an index that splits cleanly, one that needs
the floor division and the remainder, a padded extent), the candidates the program's
indices give, one test per refusal reason, and the outputs on the interpreter and in
compiled C (a GEMM schedule whose packed A becomes BLAS-style micro-panels), and a property
test: any division of any affine index (after a split or not) keeps the outputs."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dojo_core import harness, interp
from dojo_core.checker import check
from dojo_core.codegen import detect_host_target
from dojo_core.kernels import load_kernel, random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.steps import replay
from dojo_core.transforms import actions, apply_step

from kernels_text import kernel_text
from transform_checks import applied, assert_refused, assert_same_outputs

ROWS = kernel_text("rows(N = 12, K = 8)", "in A: f32[N, K]; out s: f32[N]; temp T: f32[N, K]", """\
for i in 0..N:
  for k in 0..K:
    T[i, k] = A[i, k] * 2
for i0 in 0..N // 4:
  for i1 in 0..4:
    s[4*i0 + i1] = 0
    for k2 in 0..K:
      s[4*i0 + i1] += T[4*i0 + i1, k2]
""")

DIVIDED = kernel_text("rows(N = 12, K = 8)",
                      "in A: f32[N, K]; out s: f32[N]; temp T: f32[N // 4, 4, K]", """\
for i in 0..N:
  for k in 0..K:
    T[i // 4, i % 4, k] = A[i, k] * 2
for i0 in 0..N // 4:
  for i1 in 0..4:
    s[4*i0 + i1] = 0
    for k2 in 0..K:
      s[4*i0 + i1] += T[i0, i1, k2]
""")

TAILED = kernel_text("rows(N = 10, K = 8)", "in A: f32[N, K]; out s: f32[N]", """\
for i0 in 0..(N + 3) // 4:
  local Ts: f32[4, K]
  for i1 in 0..min(4, N - 4*i0):
    for k in 0..K:
      Ts[i1, k] = A[4*i0 + i1, k]
  for i2 in 0..min(4, N - 4*i0):
    s[4*i0 + i2] = 0
    for k2 in 0..K:
      s[4*i0 + i2] += Ts[i2, k2]
""")

WIDE = kernel_text("rows(N = 10, K = 6)", "in A: f32[N, K]; out s: f32[N]; temp T: f32[N, K]", """\
for i in 0..N:
  for k in 0..K:
    T[i, k] = A[i, k]
for i2 in 0..N:
  s[i2] = 0
  for k2 in 0..K:
    s[i2] += T[i2, k2]
""")


def _golden(before_text: str, steps: list, after_text: str):
    before = parse(before_text)
    after = applied(before_text, *steps)
    assert print_program(after) == after_text
    assert parse(after_text) == after
    assert_same_outputs(before, after)
    return after


def test_an_index_that_is_a_multiple_plus_a_bounded_rest_splits_into_its_parts():
    _golden(ROWS, ["divide T 0 by 4"], DIVIDED)


def test_divide_then_layout_gives_the_rows_of_a_tile_next_to_each_other():
    after = _golden(ROWS, ["divide T 0 by 4", "layout T 0 2 1"],
                    DIVIDED.replace("T: f32[N // 4, 4, K]", "T: f32[N // 4, K, 4]")
                    .replace("T[i // 4, i % 4, k]", "T[i // 4, k, i % 4]")
                    .replace("T[i0, i1, k2]", "T[i0, k2, i1]"))
    assert "s[4*i0 + i1] += T[i0, k2, i1]" in print_program(after)


def test_an_index_whose_rest_can_reach_the_factor_keeps_the_division_and_remainder():
    # i1 runs to 4 in a tail loop of a split by 4: above the factor 2, so no plain q, r
    after = applied(TAILED, "divide Ts 0 by 2")
    text = print_program(after)
    assert "local Ts: f32[2, 2, K]" in text
    assert "Ts[i1 // 2, i1 % 2, k] = A[4*i0 + i1, k]" in text
    assert_same_outputs(parse(TAILED), after)


def test_an_extent_the_factor_does_not_divide_is_padded():
    after = applied(WIDE, "divide T 0 by 4", "divide T 2 by 4")
    text = print_program(after)
    assert "temp T: f32[(N + 3) // 4, 4, (K + 3) // 4, 4]" in text
    assert "T[i // 4, i % 4, k // 4, k % 4] = A[i, k]" in text
    assert_same_outputs(parse(WIDE), after)


def test_the_candidates_are_the_factors_of_the_indices():
    found = [a.text for a in actions(parse(ROWS)) if a.kind == "divide"]
    assert found == ["divide T 0 by 4"]
    assert [a.text for a in actions(parse(WIDE)) if a.kind == "divide"] == []


def test_refused_for_an_array_of_the_interface():
    assert_refused(parse(ROWS), "divide A 0 by 4",
                   "'A' is an in array of the kernel's interface; only locals and temps")


def test_refused_for_an_unknown_buffer():
    assert_refused(parse(ROWS), "divide Q 0 by 4", "there is no local or temp buffer 'Q'")


def test_refused_for_a_dimension_the_buffer_does_not_have():
    assert_refused(parse(ROWS), "divide T 2 by 4", "'T' has 2 dimension(s): there is no dimension 2")


def test_refused_for_a_factor_below_two():
    assert_refused(parse(ROWS), "divide T 0 by 1", "the factor must be at least 2, got 1")


def test_refused_for_a_factor_as_large_as_the_dimension():
    assert_refused(parse(ROWS), "divide T 1 by 8",
                   "dimension 1 of 'T' has 8 elements at these sizes, not more than the factor 8")


def test_refused_for_a_prefetched_buffer():
    program = apply_step(parse(ROWS), "prefetch T at i0")
    assert_refused(program, "divide T 0 by 4",
                   "'T' is prefetched; divide it before the prefetch is added")


BIG = kernel_text("big(N = 1, K = 1048575)", "in A: f32[K]; out s: f32[N]", """\
for i in 0..N:
  local Ts: f32[K]
  for k in 0..K:
    Ts[k] = A[k]
  s[i] = 0
  for k2 in 0..K:
    s[i] += Ts[k2]
""")


def test_refused_for_a_local_that_padding_makes_too_large():
    assert_refused(parse(BIG), "divide Ts 0 by 7",
                   "'Ts' padded to a multiple of 7 would hold 1048579 elements, more than a "
                   "local may (1048576)")


# A k-blocked GEMM for AVX2 (sequential): k by 256 outermost, A's block packed row by row
# (At[rows, 256]), 16-column panels of B packed, 6 x 16 register tiles
K_BLOCKED_GEMM = [
    "fission j after s0",
    "fission i after j",
    "split i2 by 6",
    "split j2 by 16",
    "split k by 256",
    "interchange i21 j20",
    "interchange j21 k0",
    "interchange i21 k0",
    "interchange j21 k1",
    "interchange i21 k1",
    "interchange i20 j20",
    "interchange i20 k0",
    "partition i20",
    "fission k0 after i20",
    "fission j20 after k0",
    "interchange j20 k0",
    "stage A at k0 as At",
    "stage B at j20 as Bt",
    "accumulate C at k1 as acc in register",
    "accumulate C at k1t as acct in register",
    "unroll i21",
    "vectorize j21",
    "unroll i21t",
    "vectorize j21t",
]


def test_micro_panels_of_a_gemm_schedule_compute_the_same_in_c():
    # the packed A of a k-blocked GEMM (At[rows, 256]) as micro-panels At[tile, k, row of
    # tile], compiled for this machine's target and compared with the interpreter
    root = load_kernel("matmul", {"N": 40, "M": 32, "K": 512})
    program = replay(root, K_BLOCKED_GEMM)
    assert [a.text for a in actions(program) if a.kind == "divide"] == ["divide At 0 by 6"]
    packed = apply_step(apply_step(program, "divide At 0 by 6"), "layout At 0 2 1")
    assert "acc[i21, j21] += At[i20, k1, i21] * Bt[k1, j21]" in print_program(packed)
    inputs = random_inputs(root, 0)
    want = interp.run(root, inputs)
    got = harness.run_c(packed, inputs, target=detect_host_target())
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-4, atol=1e-4)


def _scattered(n: int, m: int, a: int, b: int, c: int) -> str:
    """A kernel that writes a temp at ``a*i + b*j + c`` and reads it back at the same
    places (not one-to-one when two points share an index: the later write wins, in the
    original as after any correct divide)."""
    extent = a * (n - 1) + b * (m - 1) + c + 1
    return kernel_text(f"scatter(N = {n}, M = {m})",
                       f"in A: f32[N, M]; out s: f32[N, M]; temp T: f32[{extent}]", f"""\
for i in 0..N:
  for j in 0..M:
    T[{a}*i + {b}*j + {c}] = A[i, j]
for i2 in 0..N:
  for j2 in 0..M:
    s[i2, j2] = T[{a}*i2 + {b}*j2 + {c}]
""")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 5), m=st.integers(2, 7), a=st.integers(1, 9), b=st.integers(1, 9),
       c=st.integers(0, 5), split=st.sampled_from([None, 2, 3, 4]), factor=st.integers(2, 9))
def test_any_division_of_an_affine_index_keeps_the_outputs(n, m, a, b, c, split, factor):
    text = _scattered(n, m, a, b, c)
    before = parse(text)
    program = apply_step(before, f"split j by {split}") if split and split < m else before
    extent = a * (n - 1) + b * (m - 1) + c + 1
    if factor >= extent:
        assert_refused(program, f"divide T 0 by {factor}", "dimension 0 of 'T' has")
        return
    after = apply_step(program, f"divide T 0 by {factor}")
    assert check(after) == []
    assert_same_outputs(before, after)

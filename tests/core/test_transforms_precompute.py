"""``precompute E at L as NAME``: golden before/after text, one test per refusal reason, its
candidates, the same outputs on the interpreter and in compiled C."""
from __future__ import annotations

import pytest

from dojo_core import harness
from dojo_core.codegen import generate_c
from dojo_core.kernels import random_inputs
from dojo_core.printer import print_expr, print_program
from dojo_core.transforms import REGISTRY, apply_step
from dojo_core.transforms.precompute import invariant_operands

from kernels_text import kernel_text
from transform_checks import applied, assert_refused, assert_same_outputs

GEMM = kernel_text("gemm(N = 6, M = 8, K = 16)",
                   "in alpha: f32; in A: f32[N, K]; in B: f32[K, M]; inout C: f32[N, M]", """\
for i in 0..N:
  for k0 in 0..K // 8:
    for k1 in 0..8:
      for j in 0..M:
        C[i, j] += alpha * A[i, 8*k0 + k1] * B[8*k0 + k1, j]
""")

STEP = "precompute alpha * A[i, 8*k0 + k1] at k0 as Ap"

pytestmark = pytest.mark.usefixtures("module_compile_cache")


def test_golden_precompute_at_a_reduction_block():
    after = applied(GEMM, STEP)
    assert print_program(after) == kernel_text(
        "gemm(N = 6, M = 8, K = 16)",
        "in alpha: f32; in A: f32[N, K]; in B: f32[K, M]; inout C: f32[N, M]", """\
for i in 0..N:
  for k0 in 0..K // 8:
    local Ap: f32[8]
    for k2 in 0..8:
      Ap[k2] = alpha * A[i, 8*k0 + k2]
    for k1 in 0..8:
      for j in 0..M:
        C[i, j] += Ap[k1] * B[8*k0 + k1, j]
""")
    assert_same_outputs(applied(GEMM), after)


def test_golden_precompute_over_two_loops_with_spaces_ignored():
    after = applied(GEMM, "precompute alpha*A[i, 8*k0+k1] at i as P")
    assert print_program(after) == kernel_text(
        "gemm(N = 6, M = 8, K = 16)",
        "in alpha: f32; in A: f32[N, K]; in B: f32[K, M]; inout C: f32[N, M]", """\
for i in 0..N:
  local P: f32[K]
  for k2 in 0..K:
    P[k2] = alpha * A[i, k2]
  for k0 in 0..K // 8:
    for k1 in 0..8:
      for j in 0..M:
        C[i, j] += P[8*k0 + k1] * B[8*k0 + k1, j]
""")
    assert_same_outputs(applied(GEMM), after)


def test_every_occurrence_is_replaced_and_compiled_c_agrees():
    text = GEMM.replace("C[i, j] += alpha * A[i, 8*k0 + k1] * B[8*k0 + k1, j]",
                        "C[i, j] += alpha * A[i, 8*k0 + k1] * B[8*k0 + k1, j]"
                        " + alpha * A[i, 8*k0 + k1]")
    before = applied(text)
    after = applied(text, STEP, "vectorize j")
    assert print_program(after).count("Ap[k1]") == 2
    assert_same_outputs(before, after)
    result = harness.verify(after, before, random_inputs(before, 1))
    assert result["verified"], result
    assert "Ap[" in generate_c(after)


def test_parse_and_usage():
    t = REGISTRY["precompute"]
    assert t.parse(STEP.split()[1:]) == ("alpha * A[i, 8*k0 + k1]", "k0", "Ap")
    assert t.format(t.parse(STEP.split()[1:])) == STEP
    assert_refused(applied(GEMM), "precompute alpha at k0", "usage: precompute EXPR at LOOP")


def test_candidates_are_broadcast_operands_where_they_vary():
    found = REGISTRY["precompute"].enumerate(applied(GEMM))
    assert found == ["precompute alpha * A[i, 8*k0 + k1] at i as pre",
                     "precompute alpha * A[i, 8*k0 + k1] at k0 as pre"]
    for text in found:
        assert_same_outputs(applied(GEMM), applied(GEMM, text))


def test_invariant_operands():
    program = applied(GEMM)
    value = program.body[0].body[0].body[0].body[0].body[0].value
    assert [print_expr(e) for e in invariant_operands(value, "j")] == ["alpha * A[i, 8*k0 + k1]"]
    assert invariant_operands(value, "k1") == []


# ------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("step, reason", [
    ("precompute alpha * A[i, 8*k0 + k1] at q as Ap", "there is no loop 'q'"),
    ("precompute alpha * B[i, k0] at k0 as Ap", "the expression 'alpha * B[i, k0]' does not occur"),
    ("precompute A[i, 8*k0 + k1] at k0 as Ap", "'A[i, 8*k0 + k1]' is already a plain access"),
    ("precompute alpha * A[i, 8*k0 + k1] at k1 as Ap",
     "'alpha * A[i, 8*k0 + k1]' takes one value in an iteration of 'k1'"),
    ("precompute alpha * A[i, 8*k0 + k1] * B[8*k0 + k1, j] at k0 as Ap",
     "'alpha * A[i, 8*k0 + k1] * B[8*k0 + k1, j]' reads 2 elements that loops inside 'k0' change"),
    ("precompute alpha * A[i, 8*k0 + k1] at k0 as C", "the name 'C' is already taken"),
])
def test_refusals_on_gemm(step, reason):
    assert_refused(applied(GEMM), step, reason)


def test_refused_in_a_vectorized_loop():
    assert_refused(applied(GEMM, "vectorize j"), "precompute alpha * A[i, 8*k0 + k1] at j as P",
                   "loop 'j' is vectorized")


def test_refused_inside_select():
    text = GEMM.replace("alpha * A[i, 8*k0 + k1] * B[8*k0 + k1, j]",
                        "select(j < 4, alpha * A[i, 8*k0 + k1], 0.0) * B[8*k0 + k1, j]")
    assert_refused(applied(text), STEP, "'alpha * A[i, 8*k0 + k1]' stands inside a select")


def test_refused_with_an_iterator_outside_an_index():
    text = GEMM.replace("alpha * A[i, 8*k0 + k1]", "(alpha + k1) * A[i, 8*k0 + k1]")
    assert_refused(applied(text), "precompute (alpha + k1) * A[i, 8*k0 + k1] at k0 as P",
                   "'(alpha + k1) * A[i, 8*k0 + k1]' uses the iterator 'k1'")


def test_refused_when_an_input_is_written_inside():
    text = kernel_text("w(N = 4, K = 8)", "in s: f32; inout A: f32[N, K]; inout C: f32[N]", """\
for i in 0..N:
  for k in 0..K:
    C[i] += s * A[i, k]
    A[i, k] = 0
""")
    assert_refused(applied(text), "precompute s * A[i, k] at i as P",
                   "'A' is written inside loop 'i'")


def test_refused_in_statements_of_two_types():
    text = kernel_text("t(N = 4, K = 8)",
                       "in s: f32; in A: f32[N, K]; inout C: f32[N]; inout D: f64[N]", """\
for i in 0..N:
  for k in 0..K:
    C[i] += s * A[i, k]
    D[i] += s * A[i, k]
""")
    assert_refused(applied(text), "precompute s * A[i, k] at i as P",
                   "'s * A[i, k]' occurs in statements of different types (f32, f64)")


def test_refused_for_a_narrow_type():
    text = kernel_text("b(N = 4, K = 8)", "in s: bf16; in A: bf16[N, K]; inout C: bf16[N]", """\
for i in 0..N:
  for k in 0..K:
    C[i] += s * A[i, k]
""")
    assert_refused(applied(text), "precompute s * A[i, k] at i as P",
                   "a bf16 statement computes 's * A[i, k]' in f32")


def test_refused_for_an_input_of_another_type():
    text = kernel_text("m(N = 4, K = 8)", "in s: f64; in A: f32[N, K]; inout C: f32[N]", """\
for i in 0..N:
  for k in 0..K:
    C[i] += s * A[i, k]
""")
    assert_refused(applied(text), "precompute s * A[i, k] at i as P",
                   "'s' is not of the statements' type f32")


def test_refused_for_a_local_of_the_loop():
    text = kernel_text("l(N = 4, K = 8)", "in A: f32[N, K]; inout C: f32[N]", """\
for i in 0..N:
  local t: f32[K]
  for k in 0..K:
    t[k] = A[i, k]
  for k2 in 0..K:
    C[i] += 2 * t[k2]
""")
    assert_refused(applied(text), "precompute 2 * t[k2] at i as P",
                   "'t' is written inside loop 'i'")


def test_refused_when_the_buffer_is_too_large():
    text = kernel_text("big(N = 2048, K = 1024)", "in s: f32; in A: f32[N, K]; inout C: f32", """\
for r in 0..1:
  for i in 0..N:
    for k in 0..K:
      C += s * A[i, k]
""")
    assert_refused(applied(text), "precompute s * A[i, k] at r as P",
                   "'s * A[i, k]' takes 2097152 values in 'r', more than the 1048576")

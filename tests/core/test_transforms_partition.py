"""partition: golden before/after text, one test per refusal reason, and the outputs of
partitioned tiles (interpreted and compiled) against the untransformed kernel."""
from __future__ import annotations

import pytest

from dojo_core.kernels import random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import NotApplicable, actions, apply_step, explain

from kernels_text import head, kernel_text, matmul_split_i, matmul_text
from transform_checks import applied, assert_same_outputs

ODD_MATMUL = matmul_text(61, 45, 40)

HEADER = head(ODD_MATMUL)

SCALE = kernel_text("scale(N = 61, M = 45)", "in A: f32[N, M]; out C: f32[N, M]", """\
for i in 0..N:
  for j in 0..M:
    C[i, j] = 2 * A[i, j]
""")

TRIANGLE = kernel_text("tri(N = 30)", "in A: f32[N, N]; out S: f32[N]", """\
for i in 0..N:
  S[i] = 0
  for j in 0..i + 1:
    S[i] += A[i, j]
""")


steps = applied


def same_outputs(before, after):
    assert_same_outputs(before, after, seed=5)


def test_partition_golden():
    p = steps(ODD_MATMUL, "split i by 6", "partition i0")
    assert print_program(p) == HEADER + matmul_split_i(6) + """\
for i1t in 0..N % 6:
  for jt in 0..M:
    C[6 * (N // 6) + i1t, jt] = 0
    for kt in 0..K:
      C[6 * (N // 6) + i1t, jt] += A[6 * (N // 6) + i1t, kt] * B[kt, jt]
"""
    same_outputs(parse(ODD_MATMUL), p)


def test_partition_lets_a_tile_with_tails_unroll_and_vectorize():
    p = steps(SCALE, "split i by 6", "split j by 16", "interchange i1 j0",
              "partition i0", "partition j0", "unroll i1", "vectorize j1")
    text = print_program(p)
    assert "for i1 in 0..6 unroll:" in text and "for j1 in 0..16 vector:" in text
    assert "for j1t2 in 0..M % 16:" in text and "for i1t in 0..N % 6:" in text
    assert explain(steps(SCALE, "split i by 6"), "unroll i1") is not None
    same_outputs(parse(SCALE), p)


def test_partition_renames_locals_of_the_copy():
    p = steps(ODD_MATMUL, "split i by 6", "stage A at i0 as Ap", "partition i0")
    text = print_program(p)
    assert "local Ap: f32[6, K]" in text and "local Apt: f32[6, K]" in text
    assert "Apt[i1t, kt]" in text
    same_outputs(parse(ODD_MATMUL), p)


def test_partition_of_a_triangular_split_keeps_the_copy_nonnegative():
    p = steps(TRIANGLE, "split j by 4", "partition j0")
    text = print_program(p)
    assert "for j0 in 0..(i + 1) // 4:" in text
    assert "for j0t in max((i + 1) // 4, 0)..(i + 4) // 4:" in text
    same_outputs(parse(TRIANGLE), p)


def test_partition_is_offered_only_where_a_tail_exists():
    p = steps(ODD_MATMUL, "split i by 6", "split k by 8")
    offered = {a.text for a in actions(p) if a.kind == "partition"}
    assert offered == {"partition i0"}        # 8 divides K = 40: no tail to cut


@pytest.mark.parametrize("prefix,step,reason", [
    ((), "partition q", "there is no loop 'q'"),
    ((), "partition i", "no loop inside 'i' has a split tail min(F, E - F*i)"),
    (("split k by 8",), "partition k0", "no loop inside 'k0' has a split tail"),
    (("split i by 6", "bind i0 gpu.block.x"), "partition i0",
     "loop 'i0' is bound to the GPU grid; partition before binding"),
    (("split i by 6",), "partition i0 i1", "usage: partition LOOP"),
])
def test_refusal_reasons(prefix, step, reason):
    p = steps(ODD_MATMUL, *prefix)
    why = explain(p, step)
    assert why is not None and why.startswith(reason), why
    with pytest.raises(NotApplicable):
        apply_step(p, step)


def test_refuses_when_the_factor_divides_at_these_sizes():
    text = ODD_MATMUL.replace("K = 40", "K = 41")
    p = steps(text, "split k by 8")
    # the split left a tail at K = 41; the same IR instantiated at K = 40 has none
    at_40 = parse(print_program(p).replace("K = 41", "K = 40"))
    assert explain(p, "partition k0") is None
    assert explain(at_40, "partition k0") == \
        "8 divides the extent of the split at these sizes: there is no tail"


@pytest.mark.parametrize("source,texts", [
    (SCALE, ("split i by 6", "split j by 16", "interchange i1 j0", "partition i0",
             "partition j0", "unroll i1", "vectorize j1", "parallelize i0", "parallelize j0t")),
    (TRIANGLE, ("split j by 4", "partition j0", "vectorize j1")),
])
def test_partitioned_programs_compile_and_match_the_interpreter(source, texts):
    from dojo_core import harness
    original = parse(source)
    p = steps(source, *texts)
    result = harness.verify(p, original, random_inputs(original, 1), reference="interp")
    assert result["verified"], result

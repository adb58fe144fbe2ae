"""Golden before/after text and one test per refusal reason for split, interchange,
parallelize, vectorize, unroll and bind; plus the detector's and replay's contracts."""
from __future__ import annotations

import pytest

from dojo_core.kernels import load_kernel
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import NotApplicable, actions, apply_step, explain

from kernels_text import head, kernel_text, matmul_split_i, matmul_text
from transform_checks import applied, assert_same_outputs

MATMUL = matmul_text(64, 48, 40)

HEADER = head(MATMUL)

STENCIL = kernel_text("stencil(N = 16, M = 16)", "inout A: f32[N, M]", """\
for i in 1..N:
  for j in 0..M - 1:
    A[i, j] = A[i - 1, j + 1] + A[i, j]
""")

RECURRENCE = kernel_text("prefix(N = 32)", "inout A: f32[N]", """\
for i in 1..N:
  A[i] = A[i - 1] + A[i]
""")


steps = applied
same_outputs = assert_same_outputs


# ----------------------------------------------------------------------------- golden

@pytest.mark.parametrize("texts, body", [
    pytest.param(["split i by 16"], matmul_split_i(16), id="split_exact"),
    pytest.param(["split k by 16"], """\
for i in 0..N:
  for j in 0..M:
    C[i, j] = 0
    for k0 in 0..(K + 15) // 16:
      for k1 in 0..min(16, K - 16*k0):
        C[i, j] += A[i, 16*k0 + k1] * B[16*k0 + k1, j]
""", id="split_with_tail"),
    pytest.param(["interchange i j"], """\
for j in 0..M:
  for i in 0..N:
    C[i, j] = 0
    for k in 0..K:
      C[i, j] += A[i, k] * B[k, j]
""", id="interchange"),
])
def test_golden(texts, body):
    p = steps(MATMUL, *texts)
    assert print_program(p) == HEADER + body
    same_outputs(parse(MATMUL), p)


def test_split_of_a_tail_loop_and_a_nonzero_lower_bound():
    p = steps(MATMUL, "split k by 16", "split k1 by 4")
    assert "for k10 in 0..(min(16, K - 16*k0) + 3) // 4:" in print_program(p)
    assert "for k11 in 0..min(4, min(16, K - 16*k0) - 4*k10):" in print_program(p)
    same_outputs(parse(MATMUL), p)
    q = steps(STENCIL, "split i by 4")
    assert "for i0 in 0..(N + 2) // 4:" in print_program(q)
    assert "A[4*i0 + i1 + 1, j] = A[4*i0 + i1, j + 1] + A[4*i0 + i1 + 1, j]" in print_program(q)
    same_outputs(parse(STENCIL), q)


def test_annotations_golden():
    p = steps(MATMUL, "split j by 16", "parallelize i", "vectorize k", "unroll j1")
    assert print_program(p) == HEADER + """\
for i in 0..N parallel:
  for j0 in 0..M // 16:
    for j1 in 0..16 unroll:
      C[i, 16*j0 + j1] = 0
      for k in 0..K vector:
        C[i, 16*j0 + j1] += A[i, k] * B[k, 16*j0 + j1]
"""


def test_split_moves_annotations_to_the_right_loop():
    p = steps(MATMUL, "parallelize i", "split i by 8")
    assert "for i0 in 0..N // 8 parallel:\n  for i1 in 0..8:\n" in print_program(p)


def test_bind_golden():
    p = steps(MATMUL, "split i by 16", "split j by 16", "interchange i1 j0",
              "bind i0 gpu.block.y", "bind j0 gpu.block.x", "bind i1 gpu.thread.y",
              "bind j1 gpu.thread.x")
    text = print_program(p)
    assert "for i0 in 0..N // 16 gpu.block.y:\n  for j0 in 0..M // 16 gpu.block.x:\n" \
           "    for i1 in 0..16 gpu.thread.y:\n      for j1 in 0..16 gpu.thread.x:\n" in text


# ----------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("program,step,reason", [
    (MATMUL, "split q by 4", "there is no loop 'q'"),
    (MATMUL, "split i by 1", "the factor must be at least 2, got 1"),
    (MATMUL, "split i by 64", "the factor 64 is not smaller than the extent 64 of loop 'i'"),
    (MATMUL, "split i by x", "usage: split LOOP by FACTOR (FACTOR must be an integer, got 'x')"),
    (MATMUL, "split i 4", "usage: split LOOP by FACTOR"),
    (MATMUL, "interchange j k", "loops 'j' and 'k' are not perfectly nested "
                                "('k' must be the only statement in 'j')"),
    (MATMUL, "interchange i k", "loops 'i' and 'k' are not perfectly nested "
                                "('k' must be the only statement in 'i')"),
    (STENCIL, "interchange i j", "a dependence with direction (<, >) on (i, j) would be reversed"),
    (MATMUL, "parallelize k", "loop 'k' carries a dependence, so its iterations cannot run "
                              "in parallel"),
    (STENCIL, "parallelize i", "loop 'i' carries a dependence, so its iterations cannot run "
                               "in parallel"),
    (RECURRENCE, "vectorize i", "loop 'i' carries a dependence that is not a reduction, so its "
                                "iterations cannot run as SIMD lanes"),
    (MATMUL, "vectorize j", "loop 'j' is not innermost (its body must hold only assignments)"),
    ("kernel u(N = 100)\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = 1\n", "unroll i",
     "loop 'i' has 100 iterations; unroll takes at most 64"),
    ("kernel u(N = 64, M = 16)\nout B: f32[N, M]\n\nfor i in 0..N:\n  for j in 0..M unroll:\n"
     "    B[i, j] = 1\n", "unroll i",
     "unrolling loop 'i' would give 1024 statements once the unrolled loops are copied out; "
     "unroll takes at most 512"),
    ("kernel u(N = 64, M = 16)\nout B: f32[N, M]\n\nfor i in 0..N unroll:\n  for j in 0..M:\n"
     "    B[i, j] = 1\n", "unroll j",
     "unrolling loop 'j' would give 1024 statements once the unrolled loops are copied out; "
     "unroll takes at most 512"),
    (MATMUL, "bind k gpu.thread.x", "loop 'k' carries a dependence, so it cannot be bound to "
                                    "the GPU grid"),
    (MATMUL, "frobnicate i", "unknown transformation 'frobnicate'"),
])
def test_refusal_reasons(program, step, reason):
    p = parse(program)
    why = explain(p, step)
    assert why is not None and why.startswith(reason), why
    with pytest.raises(NotApplicable):
        apply_step(p, step)


def test_annotation_refusals_after_annotating():
    p = steps(MATMUL, "parallelize i")
    assert explain(p, "parallelize i") == "loop 'i' is already annotated (parallel)"
    assert explain(p, "parallelize j") == "loop 'j' is already inside the parallel loop 'i'"
    assert explain(p, "interchange i j") == ("annotated loops are not interchanged; "
                                             "interchange before annotating")
    q = steps(MATMUL, "split i by 32", "split j by 32", "interchange i1 j0",
              "bind i0 gpu.block.x", "bind i1 gpu.thread.x")
    assert explain(q, "bind j0 gpu.block.x") == "gpu.block.x is already bound in this loop nest"
    assert explain(q, "bind j1 gpu.block.y") == "a block loop cannot sit inside a thread loop"
    assert explain(q, "split i0 by 2") == "loop 'i0' is bound to the GPU grid; split before binding"
    assert explain(q, "bind j1 gpu.thread.y") is None      # 32 x 32 = 1024 threads


def test_thread_limit():
    p = steps(MATMUL, "split i by 32", "bind i1 gpu.thread.x")
    assert explain(p, "bind j gpu.thread.y") == "1536 threads per block exceed the limit of 1024"


FORWARD = kernel_text("forward(N = 20)", "in L: f64[N, N]; out x: f64[N]", """\
for i in 0..N:
  x[i] = 1
  for j0 in 0..i // 4:
    for j1 in 0..4:
      x[i] += -L[i, 4*j0 + j1] * x[4*j0 + j1]
""")


def test_a_reduction_reading_other_elements_of_its_array_vectorizes():
    # x[j] with j < i is never the x[i] the loop updates (exact dependences), so the
    # sum may be reassociated into lanes: the result matches the scalar kernel
    p = steps(FORWARD, "vectorize j1")
    assert "for j1 in 0..4 vector:" in print_program(p)
    assert_same_outputs(parse(FORWARD), p, seed=3)


def test_a_reduction_reading_an_element_it_updates_does_not_vectorize():
    # x[4*j0 + j1] reaches x[i] itself when the blocks run up to i + 1
    reaching = FORWARD.replace("i // 4", "(i + 4) // 4").replace("in L: f64[N, N]", "in L: f64[N, N + 4]")
    why = explain(parse(reaching), "vectorize j1")
    assert why is not None and why.startswith("loop 'j1' carries a dependence that is not a "
                                              "reduction"), why


def test_reduction_vectorizes_but_does_not_parallelize():
    p = parse(MATMUL)
    assert explain(p, "vectorize k") is None
    assert explain(p, "parallelize k") is not None


# ----------------------------------------------------------------------------- detector

def test_actions_are_legal_and_deterministic():
    p = steps(MATMUL, "split i by 16", "split k by 8")
    first = [a.text for a in actions(p)]
    assert first == [a.text for a in actions(parse(print_program(p)))]
    assert len(first) == len(set(first))
    for text in first:
        assert explain(p, text) is None, text


def test_split_factor_menu():
    texts = {a.text for a in actions(parse(MATMUL))}
    assert {"split i by 2", "split i by 16", "split i by 32"} <= texts   # powers of two
    assert {"split j by 3", "split j by 6", "split j by 12", "split j by 24"} <= texts  # divisors
    assert "split i by 64" not in texts


def test_library_start_states_have_actions():
    for name in ("matmul", "softmax", "conv2d"):
        assert len(actions(load_kernel(name))) > 10


def test_bind_keeps_shared_locals_between_block_and_thread_loops():
    p = steps(MATMUL, "split i by 16", "split i0 by 2", "bind i00 gpu.block.y",
              "stage B at i00 as Bs in shared")
    assert explain(p, "bind i01 gpu.block.x") == (
        "a shared local declared outside loop 'i01' would sit outside the block loops")
    q = steps(MATMUL, "split i by 16", "bind i0 gpu.block.x", "stage B at i1 as Bs in shared")
    assert explain(q, "bind i1 gpu.thread.x") == (
        "loop 'i1' declares a shared local, which must stay outside the thread loops")

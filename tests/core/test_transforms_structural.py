"""The structural transformations: fuse, fission, reorder, hoist, merge.

For each: golden before/after text, one test per reason it refuses (the classic traps
included: a refused step, forced through `apply`, really changes the outputs), and
equivalence on the interpreter for the golden cases, for random legal walks over the
kernel library and for random valid programs; plus the cost of enumerating them.
"""
from __future__ import annotations

import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from dojo_core import deps, ir
from dojo_core.checker import check
from dojo_core.kernels import info, list_kernels, load_kernel, random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import REGISTRY, actions, apply_step, explain
from dojo_core.transforms import fission, fuse, hoist, reorder

from kernels_text import kernel_text, matmul_text, with_body
from transform_checks import walk

from dojo_core.interp import run as interp_run

try:
    from strategies import programs
except ImportError:   # pragma: no cover - run from the repository root as a package
    from tests.strategies import programs

MINE = ("fuse", "fission", "reorder", "hoist", "merge")


def program(text: str) -> ir.Program:
    p = parse(text)
    assert check(p) == [], check(p)
    return p


def step(p: ir.Program, text: str) -> ir.Program:
    """Apply a legal step and check the result is a valid program."""
    assert explain(p, text) is None, explain(p, text)
    q = apply_step(p, text)
    assert check(q) == [], (text, print_program(q), check(q))
    return q


def force(p: ir.Program, text: str) -> ir.Program:
    """Apply a step without its legality check (to show what a refused step would do)."""
    words = text.split()
    t = REGISTRY[words[0]]
    return t.apply(p, t.parse(words[1:]))


def outputs(p: ir.Program, seed: int = 0) -> dict:
    return interp_run(p, random_inputs(p, seed))


def same_outputs(a: ir.Program, b: ir.Program, seed: int = 0) -> bool:
    inputs = random_inputs(a, seed)
    x, y = interp_run(a, inputs), interp_run(b, inputs)
    return all(np.allclose(x[k], y[k], rtol=1e-4, atol=1e-6, equal_nan=True) for k in x)


def assert_golden(before: str, steps: list, after: str) -> ir.Program:
    """The steps take before to after; after is a whole kernel text, or only the body when the
    steps leave before's kernel line and declarations as they are."""
    if not after.startswith("kernel "):
        after = with_body(before, after)
    p = q = program(before)
    for s in steps:
        q = step(q, s)
    assert print_program(q) == after
    assert parse(after) == q
    if interp_run is not None:
        assert same_outputs(p, q)
    return q


def assert_trap(p: ir.Program, text: str, why: str):
    """text is refused at p for a reason containing why, and forced through, it changes the
    outputs."""
    assert why in reason(p, text)
    if interp_run is not None:
        assert not same_outputs(p, force(p, text))


def reason(p: ir.Program, text: str) -> str:
    r = explain(p, text)
    assert r is not None, f"'{text}' should be refused"
    assert text not in [a.text for a in actions(p)]
    return r


MATMUL = matmul_text(8, 12, 10)

# the update nest in a loop j2 of its own
MATMUL_FISSIONED = MATMUL.replace("    for k in 0..K:\n      C[i, j] += A[i, k] * B[k, j]\n",
                                  "  for j2 in 0..M:\n    for k in 0..K:\n"
                                  "      C[i, j2] += A[i, k] * B[k, j2]\n")

ELEMENTWISE = kernel_text("ew(N = 16)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i in 0..N:
  B[i] = A[i] * 2
for i2 in 0..N:
  C[i2] = B[i2] + 1
""")

# --------------------------------------------------------------------------- golden


def test_registered_in_order():
    names = list(REGISTRY)
    for n in MINE:
        assert n in names
    p = program(MATMUL)
    kinds = [a.kind for a in actions(p)]
    assert "fission" in kinds and "merge" in kinds


def test_fission_matmul_init_from_reduction():
    assert_golden(MATMUL, ["fission j after s0"], MATMUL_FISSIONED)


def test_fission_then_fuse_gives_back_the_original():
    q = assert_golden(MATMUL, ["fission j after s0", "fuse j j2"], MATMUL)
    assert q == program(MATMUL)


def test_fission_of_split_loop_names_drop_the_digits():
    p = program(MATMUL)
    q = step(step(p, "split j by 4"), "fission j1 after s0")
    assert "for j2 in 0..4:" in print_program(q)


def test_fission_name_avoids_taken_names():
    p = program(MATMUL.replace("K = 10", "K = 10, j2 = 3"))
    q = step(p, "fission j after s0")
    assert "for j3 in 0..M:" in print_program(q)


def test_fission_moves_a_local_used_only_after_the_split_point():
    """Attention's row max: the scores nest can leave the loop whose locals it never uses."""
    assert_golden(kernel_text("loc(N = 4)", "in A: f32[N]; out C: f32[N]; out B: f32[N]", """\
for i in 0..N:
  local m: f32
  local s: f32
  C[i] = A[i] * 2
  m = C[i] + 1
  s = m * m
  B[i] = s
"""), ["fission i after s0"], """\
for i in 0..N:
  C[i] = A[i] * 2
for i2 in 0..N:
  local m: f32
  local s: f32
  m = C[i2] + 1
  s = m * m
  B[i2] = s
""")


def test_fuse_two_elementwise_loops():
    assert_golden(ELEMENTWISE, ["fuse i i2"], """\
for i in 0..N:
  B[i] = A[i] * 2
  C[i] = B[i] + 1
""")


def test_fuse_renames_uses_in_nested_loops_and_bounds():
    assert_golden(kernel_text("nest(N = 4, M = 5)",
                              "in A: f32[N, M]; out B: f32[N, M]; out C: f32[N, M]", """\
for i in 0..N:
  for j in 0..M:
    B[i, j] = A[i, j]
for i2 in 0..N:
  for j2 in 0..i2 + 1:
    C[i2, j2] = B[i2, j2] * i2
  for j3 in i2 + 1..M:
    C[i2, j3] = 0
"""), ["fuse i i2"], """\
for i in 0..N:
  for j in 0..M:
    B[i, j] = A[i, j]
  for j2 in 0..i + 1:
    C[i, j2] = B[i, j2] * i
  for j3 in i + 1..M:
    C[i, j3] = 0
""")


def test_reorder_independent_statements():
    assert_golden(kernel_text("two(N = 16)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i in 0..N:
  B[i] = A[i] + 1
  C[i] = A[i] * 2
"""), ["reorder s0 s1"], """\
for i in 0..N:
  C[i] = A[i] * 2
  B[i] = A[i] + 1
""")


def test_reorder_loops_and_across_a_local():
    assert_golden(kernel_text("loops(N = 6)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i in 0..N:
  B[i] = A[i]
local t: f32
for j in 0..N:
  C[j] = A[j] * 3
t = B[0]
"""), ["reorder i j"], """\
for j in 0..N:
  C[j] = A[j] * 3
local t: f32
for i in 0..N:
  B[i] = A[i]
t = B[0]
""")


def test_reorder_keeps_a_dependence_carried_by_the_loop():
    # C[i] reads B[i - 1], written in the previous iteration: still so after the swap
    assert_golden(kernel_text("carried(N = 8)", "in A: f32[N]; inout B: f32[N]; out C: f32[N]", """\
for i in 1..N:
  B[i] = A[i]
  C[i - 1] = B[i - 1]
"""), ["reorder s0 s1"], """\
for i in 1..N:
  C[i - 1] = B[i - 1]
  B[i] = A[i]
""")


def test_hoist_invariant_load():
    assert_golden(kernel_text("scale(N = 4, M = 6)",
                              "in alpha: f32[N]; in B: f32[N, M]; out C: f32[N, M]", """\
for i in 0..N:
  local a: f32
  for j in 0..M:
    a = alpha[i] * 2
    C[i, j] = a * B[i, j]
"""), ["hoist s0"], """\
for i in 0..N:
  local a: f32
  a = alpha[i] * 2
  for j in 0..M:
    C[i, j] = a * B[i, j]
""")


def test_hoist_twice_and_out_of_a_loop_left_empty():
    assert_golden(kernel_text("h(N = 4, M = 6)",
                              "in alpha: f32; in B: f32[N, M]; out C: f32[N, M]; out D: f32", """\
for i in 0..N:
  for j in 0..M:
    D = alpha * 3
    C[i, j] = D * B[i, j]
"""), ["hoist s0", "hoist s0"], """\
D = alpha * 3
for i in 0..N:
  for j in 0..M:
    C[i, j] = D * B[i, j]
""")
    assert_golden(kernel_text("e(N = 4)", "in alpha: f32[N]; out D: f32[N]", """\
for i in 0..N:
  for j in 0..3:
    D[i] = alpha[i]
"""), ["hoist s0"], """\
for i in 0..N:
  D[i] = alpha[i]
""")


def test_hoist_statement_after_a_reader_of_other_elements():
    # the first statement reads D[0], the hoisted one writes D[1]: no conflict
    assert_golden(kernel_text("h2(N = 4)", "in A: f32[N]; inout D: f32[2]; out C: f32[N]", """\
for i in 0..N:
  C[i] = A[i] + D[0]
  D[1] = A[0]
"""), ["hoist s1"], """\
D[1] = A[0]
for i in 0..N:
  C[i] = A[i] + D[0]
""")


def test_merge_after_split_round_trip():
    p = program(MATMUL)
    q = step(p, "split i by 4")
    assert "for i0 in 0..N // 4:" in print_program(q)
    assert_golden(MATMUL, ["split i by 4", "merge i0 i1"], MATMUL)
    assert step(q, "merge i0 i1") == p


def test_merge_of_a_split_split_keeps_the_longest_free_base():
    p = program(MATMUL)
    q = step(step(p, "split j by 4"), "split j1 by 2")
    assert step(q, "merge j10 j11") == step(p, "split j by 4")


def test_merge_two_loops():
    assert_golden(MATMUL, ["merge i j"], """\
for ij in 0..N * M:
  C[ij // 12, ij % 12] = 0
  for k in 0..K:
    C[ij // 12, ij % 12] += A[ij // 12, k] * B[k, ij % 12]
""")


def test_merge_with_constant_lower_bounds():
    assert_golden(kernel_text("off(N = 6)", "in A: f32[N + 2, 5]; out B: f32[N, 3]", """\
for a in 2..N + 2:
  for b in 1..4:
    B[a - 2, b - 1] = A[a, b]
"""), ["merge a b"], """\
for ab in 0..3*N:
  B[ab // 3, ab % 3] = A[ab // 3 + 2, ab % 3 + 1]
""")


# --------------------------------------------------------------------------- refusals

def test_parse_and_format_round_trip_and_usage():
    for text in ("fuse i i2", "fission j after s0", "reorder s0 s1", "hoist s3", "merge i0 i1"):
        t = REGISTRY[text.split()[0]]
        assert t.format(t.parse(text.split()[1:])) == text
    p = program(MATMUL)
    for bad in ("fuse i", "fission j s0", "fission j before s0", "reorder s0", "hoist",
                "merge i"):
        assert explain(p, bad).startswith("usage: ")


FUSE_TRAP = """\
kernel shift(N = 8)
in  A: f32[N]
inout B: f32[N + 1]
out C: f32[N]

for i in 0..N:
  B[i] = A[i]
for i2 in 0..N:
  C[i2] = B[i2 + 1]
"""


def test_fuse_refuses_a_reversed_dependence():
    p = program(FUSE_TRAP)
    assert_trap(p, "fuse i i2", "would be reversed")


def test_fuse_allows_same_and_earlier_iterations():
    p = program(FUSE_TRAP.replace("B[i2 + 1]", "B[i2]"))
    q = step(p, "fuse i i2")
    assert "C[i] = B[i]" in print_program(q)
    p2 = program("""\
kernel shift(N = 8)
in  A: f32[N]
inout B: f32[N]
out C: f32[N - 1]

for i in 1..N:
  B[i] = A[i]
for i2 in 1..N:
  C[i2 - 1] = B[i2 - 1]
""")
    q2 = step(p2, "fuse i i2")
    assert "C[i - 1] = B[i - 1]" in print_program(q2)
    if interp_run is not None:
        assert same_outputs(p, q) and same_outputs(p2, q2)


def test_fuse_refusals():
    p = program(ELEMENTWISE.replace("out C: f32[N]", "out C: f32[N]\nout D: f32[N]") +
                "for i3 in 0..N:\n  D[i3] = A[i3]\n")
    assert reason(p, "fuse x i2") == "there is no loop 'x'"
    assert reason(p, "fuse i y") == "there is no loop 'y'"
    assert "does not directly follow" in reason(p, "fuse i i3")
    assert "does not directly follow" in reason(p, "fuse i2 i")
    annotated = step(p, "parallelize i2")
    assert "annotated" in reason(annotated, "fuse i i2")
    bounds = program(ELEMENTWISE.replace("for i2 in 0..N", "for i2 in 1..N"))
    assert "do not have the same bounds" in reason(bounds, "fuse i i2")


def test_fuse_compares_simplified_bounds():
    p = program(ELEMENTWISE.replace("for i in 0..N", "for i in 0..N + 1 - 1"))
    assert "fuse i i2" in fuse.FUSE.enumerate(p)


FISSION_TRAP = kernel_text("carried(N = 8)", "in X: f32[N]; out A: f32[N]; inout B: f32[N]", """\
for i in 1..N:
  A[i] = B[i - 1] + 1
  B[i] = X[i] * 2
""")


def test_fission_refuses_a_backward_carried_dependence():
    p = program(FISSION_TRAP)
    assert_trap(p, "fission i after s0", "backward carried dependence")


def test_fission_allows_a_forward_dependence():
    p = program(FISSION_TRAP.replace("B[i - 1]", "B[i + 1]").replace("inout B: f32[N]",
                                                                        "inout B: f32[N + 1]"))
    q = step(p, "fission i after s0")
    assert print_program(q).endswith("for i in 1..N:\n  A[i] = B[i + 1] + 1\n"
                                     "for i2 in 1..N:\n  B[i2] = X[i2] * 2\n")
    if interp_run is not None:
        assert same_outputs(p, q)


# the reasons of refused steps at MATMUL: (step text, the whole reason)
MATMUL_REASONS = [
    ("fission x after s0", "there is no loop 'x'"),
    ("fission j after s7", "there is no statement 's7'"),
    ("reorder s9 s1", "there is no statement 's9'"),
    ("reorder s0 q", "there is no statement 'q'"),
    ("merge x j", "there is no loop 'x'"),
    ("merge i y", "there is no loop 'y'"),
]

# (step text, a part of the reason)
MATMUL_REASON_PARTS = [
    ("fission i after s0", "not directly in the body"),
    ("fission j after s1", "not directly in the body"),
    ("fission j after k", "is the last statement"),
    ("reorder k s0", "does not directly follow"),
    ("reorder s0 s1", "does not directly follow"),
    ("reorder s0 k", "depend on each other"),
    ("merge j k", "not perfectly nested"),
    ("merge i k", "not perfectly nested"),
]


@pytest.mark.parametrize("text, why", MATMUL_REASONS, ids=[t for t, _ in MATMUL_REASONS])
def test_matmul_refusal_reasons(text, why):
    assert reason(program(MATMUL), text) == why


@pytest.mark.parametrize("text, why", MATMUL_REASON_PARTS,
                         ids=[t for t, _ in MATMUL_REASON_PARTS])
def test_matmul_refusal_reason_parts(text, why):
    assert why in reason(program(MATMUL), text)


def test_fission_refusals():
    local = program(kernel_text("loc(N = 4)", "in A: f32[N]; out B: f32[N]", """\
for i in 0..N:
  local t: f32
  t = A[i]
  B[i] = t * 2
"""))
    assert reason(local, "fission i after s0") == \
        "the local 't' declared in the first part is used both up to and after 's0'"


def test_fission_keeps_annotations_and_local_usage_in_first_part():
    p = program(kernel_text("loc(N = 4)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i in 0..N parallel:
  local t: f32
  t = A[i]
  B[i] = t * 2
  C[i] = A[i] + 1
"""))
    q = step(p, "fission i after s1")
    assert print_program(q).endswith("""\
for i in 0..N parallel:
  local t: f32
  t = A[i]
  B[i] = t * 2
for i2 in 0..N parallel:
  C[i2] = A[i2] + 1
""")


def test_reorder_refuses_dependent_statements():
    p = program(kernel_text("dep(N = 8)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i in 0..N:
  B[i] = A[i] + 1
  C[i] = B[i] * 2
"""))
    assert "depend on each other" in reason(p, "reorder s0 s1")
    # a write after read of the same element is a dependence too
    war = program("""\
kernel war(N = 8)
in  A: f32[N]
inout B: f32[N]
out C: f32[N]

for i in 0..N:
  C[i] = B[i] * 2
  B[i] = A[i] + 1
""")
    assert_trap(war, "reorder s0 s1", "depend on each other")


def test_reorder_refusals():
    local = program(kernel_text("loc(N = 4)", "in A: f32[N]; out B: f32[N]; out C: f32[N]", """\
for i in 0..N:
  B[i] = A[i]
  local t: f32
  t = A[i]
  C[i] = t
"""))
    assert "uses the local 't'" in reason(local, "reorder s0 s1")


HOIST_BASE = kernel_text("hb(N = 4, M = 6)",
                         "in alpha: f32[N]; in B: f32[N, M]; out C: f32[N, M]; out D: f32[N]", """\
for i in 0..N:
  for j in 0..M:
BODY
""")


def hoist_case(body: str) -> ir.Program:
    return program(HOIST_BASE.replace("BODY", body))


def test_hoist_refuses_a_statement_using_the_iterator():
    p = hoist_case("    D[i] = alpha[i] * B[i, j]\n    C[i, j] = D[i]\n")
    assert "uses the iterator 'j'" in reason(p, "hoist s0")


def test_hoist_refuses_reading_what_the_loop_writes():
    # D[i] reads C[i, 0], written by s0 at j = 0: its value before the loop is different
    p = hoist_case("    C[i, j] = B[i, j] + 1\n    D[i] = C[i, 0] * 2\n")
    assert_trap(p, "hoist s1", "written inside loop 'j'")
    # a statement reading what it writes itself is not invariant either
    own = program(kernel_text("own(N = 4, M = 6)", "in alpha: f32[N]; inout D: f32[N]", """\
for i in 0..N:
  for j in 0..M:
    D[i] = D[i] * 2
"""))
    assert_trap(own, "hoist s0", "written inside loop 'j'")


def test_hoist_refuses_another_writer():
    p = hoist_case("    D[i] = alpha[i]\n    C[i, j] = D[i]\n    D[i] = B[i, 0]\n")
    assert_trap(p, "hoist s0", "another statement inside loop 'j' writes")


def test_hoist_refuses_an_earlier_reader():
    p = program("""\
kernel er(N = 4, M = 6)
in  alpha: f32[N]
in  B: f32[N, M]
out C: f32[N, M]
inout D: f32[N]

for i in 0..N:
  for j in 0..M:
    C[i, j] = D[i] * B[i, j]
    D[i] = alpha[i]
""")
    assert_trap(p, "hoist s1", "a statement before 's1'")


def test_hoist_refuses_a_loop_that_may_not_run():
    p = program(kernel_text("z(N = 4)", "in alpha: f32[N]; out D: f32[N]", """\
for i in 0..N:
  for j in 0..i:
    D[i] = alpha[i]
"""))
    assert "may run zero times" in reason(p, "hoist s0")
    ok = program(kernel_text("z(N = 4)", "in alpha: f32[N]; out D: f32[N]", """\
for i in 0..N:
  for j in 0..i + 1:
    D[i] = alpha[i]
"""))
    assert explain(ok, "hoist s0") is None
    empty_top = program(kernel_text("z(N = 4)", "in alpha: f32[N]; out D: f32[N]", """\
for i in 0..N:
  D[i] = alpha[i]
for j in 0..0:
  D[0] = alpha[1]
"""))
    assert "may run zero times" in reason(empty_top, "hoist s1")


def test_hoist_refusals():
    p = hoist_case("    D[i] = 0\n    D[i] += alpha[i]\n    C[i, j] = D[i]\n")
    assert reason(p, "hoist s9") == "there is no statement 's9'"
    assert "is a loop" in reason(p, "hoist j")
    assert "reduction" in reason(p, "hoist s1")
    top = program(kernel_text("t(N = 4)", "in alpha: f32[N]; out D: f32[N]", """\
D[0] = alpha[0]
"""))
    assert "not inside a loop" in reason(top, "hoist s0")
    local = program(kernel_text("l(N = 4)", "in alpha: f32[N]; out D: f32[N]", """\
for i in 0..N:
  local t: f32
  t = alpha[0]
  D[i] = t
"""))
    assert "uses the local 't' declared inside loop 'i'" in reason(local, "hoist s0")
    gpu = program(kernel_text("g(N = 4)", "in alpha: f32[N]; out D: f32[N]", """\
for i in 0..N gpu.thread.x:
  D[0] = alpha[0]
"""))
    assert "bound to the GPU grid" in reason(gpu, "hoist s0")


def test_merge_refusals():
    p = program(MATMUL)
    assert "annotated" in reason(step(p, "parallelize i"), "merge i j")
    tail = step(p, "split i by 3")
    assert "no constant extent" in reason(tail, "merge i0 i1")
    tri = program(kernel_text("tri(N = 4)", "in A: f32[N, N]; out B: f32[N, N]", """\
for i in 0..N:
  for j in 0..N:
    B[i, j] = 0
for a in 0..N:
  for b in 0..a:
    B[a, b] = A[a, b]
"""))
    assert "'b' has no constant extent" in reason(tri, "merge a b")
    zero = program(kernel_text("z(N = 4)", "in A: f32[N]; out B: f32[N]", """\
for i in 0..N:
  B[i] = A[i]
for a in 0..N:
  for b in 0..0:
    B[a] = 1
"""))
    assert "'b' runs zero times" in reason(zero, "merge a b")


def test_statement_reference_names_are_reserved_for_statements():
    text = kernel_text("c(N = 4)", "in A: f32[N]; out B: f32[N]", """\
for s1 in 0..N:
  B[s1] = A[s1]
""")
    errors = check(parse(text))
    assert [e.message for e in errors] == [
        "iterator name 's1' is reserved: s<digits> names statements in step texts"]
    split = apply_step(program(text.replace("s1", "s")), "split s by 2")
    assert "for s_0 in 0..N // 2:\n  for s_1 in 0..2:" in print_program(split)


# --------------------------------------------------------------------------- equivalence

@pytest.mark.parametrize("name", list_kernels())
def test_random_legal_walks_keep_library_outputs(name):
    base = load_kernel(name, info(name).test_sizes)
    inputs = random_inputs(base, 1)
    expected = interp_run(base, inputs)
    for trial in range(3):
        rng = random.Random(f"{name}/{trial}")
        for history, cur in walk(base, rng, 8, MINE + ("split", "interchange"), MINE, 0.75):
            assert check(cur) == [], (history, print_program(cur))
            got = interp_run(cur, inputs)
            for k in expected:
                assert np.allclose(got[k], expected[k], rtol=1e-4, atol=1e-6), \
                    (name, history, print_program(cur))


def _comparable(a, b) -> bool:
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.dtype.kind == "f":
            if not np.allclose(x, y, rtol=1e-4, atol=1e-6, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(programs(), st.randoms(use_true_random=False))
def test_every_legal_step_keeps_random_program_outputs(p, rnd):
    # bf16 scalar inputs trip the interpreter's input handling (a numpy scalar, not an array)
    assume(not any(d.dtype == "bf16" and not d.dims and d.kind in ("in", "inout")
                   for d in p.arrays))
    inputs = random_inputs(p, 0)
    expected = interp_run(p, inputs)
    cur = p
    for _ in range(3):
        texts = [t for k in MINE for t in REGISTRY[k].enumerate(cur)]
        if not texts:
            return
        for text in texts:
            q = apply_step(cur, text)
            assert check(q) == [], (text, print_program(cur), check(q))
            assert _comparable(expected, interp_run(q, inputs)), (text, print_program(cur))
        cur = apply_step(cur, rnd.choice(texts))


def test_enumeration_is_deterministic_and_legal():
    for name in ("matmul", "softmax", "attention", "layernorm"):
        p = load_kernel(name, info(name).test_sizes)
        for k in MINE:
            first = REGISTRY[k].enumerate(p)
            assert first == REGISTRY[k].enumerate(p)
            for text in first:
                assert check(apply_step(p, text)) == []


# --------------------------------------------------------------------------- cost

MATMUL_STEPS = ["fission j after s0", "split i by 32", "split j2 by 32", "split k by 8",
                "interchange j21 k0", "split j by 16", "fission i1 after j0",
                "interchange j21 k1", "split i1 by 4", "parallelize i0"]


def test_enumerating_after_ten_steps_is_cheap():
    warm = load_kernel("softmax")
    for k in MINE:
        REGISTRY[k].enumerate(warm)       # islpy's first use
    p = load_kernel("matmul")
    for s in MATMUL_STEPS:
        p = apply_step(p, s)
    best = float("inf")
    for _ in range(3):
        deps._CACHE.clear()
        hoist._EMPTY.clear()
        start = time.perf_counter()
        found = [t for k in MINE for t in REGISTRY[k].enumerate(p)]
        best = min(best, time.perf_counter() - start)
    assert found
    assert best < 0.020, f"enumerating took {best * 1000:.1f} ms"

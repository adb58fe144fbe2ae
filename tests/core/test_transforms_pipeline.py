"""``pipeline L from M`` (software pipelining by one iteration): golden before/after text,
the two slots of a carried local, one test per refusal reason, its candidates, the vector
reductions into one slot while the other is read, compiled results on both x86 widths, and
random walks after a pipeline step on the library kernels offered one."""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dojo_core import harness, interp, ir
from dojo_core.codegen import detect_host_target, generate_c
from dojo_core.codegen.targets import TARGETS
from dojo_core.kernels import info, list_kernels, load_kernel, random_inputs
from dojo_core.parser import parse
from dojo_core.poly import apart_in_loop, never_equal
from dojo_core.printer import print_program
from dojo_core.transforms import REGISTRY, apply_step

from kernels_text import SOFTMAX_ROWS as ROWS, kernel_text, with_body, matmul_text
from transform_checks import (applied, assert_refused, assert_same_outputs,
                              assert_walk_keeps_outputs)

# softmax's three passes over a row
ROWS_PIPELINED = """\
local s: f32[2]
local mp: f32
mp = -inf
for jp in 0..M:
  mp max= X[0, jp]
s[0] = 0
for kp in 0..M:
  Y[0, kp] = exp(X[0, kp] - mp)
  s[0] += Y[0, kp]
for i in 1..N:
  local m: f32
  m = -inf
  for j in 0..M:
    m max= X[i, j]
  s[i % 2] = 0
  for k in 0..M:
    Y[i, k] = exp(X[i, k] - m)
    s[i % 2] += Y[i, k]
  for l in 0..M:
    Y[i - 1, l] = Y[i - 1, l] / s[(i - 1) % 2]
for le in 0..M:
  Y[N - 1, le] = Y[N - 1, le] / s[(N - 1) % 2]
"""

# the first pass of row i reads row i - 1, which the second pass of row i - 1 rewrites
CHAIN = kernel_text("chain(N = 5, M = 8)", "in X: f32[N, M]; inout A: f32[N, M]", """\
for i in 1..N:
  for j in 0..M:
    A[i, j] = A[i - 1, j] + X[i, j]
  for k in 0..M:
    A[i, k] = A[i, k] * 2
""")

# two passes, nothing before the first loop
TWO_PASSES = kernel_text("two(N = 4, M = 8)", "in X: f32[N, M]; out Y: f32[N, M]; out Z: f32[N, M]", """\
for i in 0..N:
  for j in 0..M:
    Y[i, j] = X[i, j] + 1
  for k in 0..M:
    Z[i, k] = Y[i, k] * 2
""")

# a carried row buffer of 2^19 elements: two slots are the most a local may hold
WIDE = kernel_text("wide(N = 2, M = 524289)", "in X: f32[N, M]; out Y: f32[N, M]", """\
for i in 0..N:
  local t: f32[M]
  for j in 0..M:
    t[j] = X[i, j]
  for k in 0..M:
    Y[i, k] = t[k]
""")

SOFTMAX_STEPS = ("split i by 3", "stage Y at i1 as Yt", "fuse l k1", "pipeline i1 from l",
                 "fuse k l")


def test_golden_softmax_rows_second_pass_one_row_later():
    after = applied(ROWS, "pipeline i from l")
    assert print_program(after) == with_body(ROWS, ROWS_PIPELINED)
    assert_same_outputs(parse(ROWS), after)


def test_carried_buffer_gets_two_slots_and_the_stages_fuse():
    after = applied(ROWS, *SOFTMAX_STEPS)
    text = print_program(after)
    assert "local Yt: f32[2, M]" in text and "local s: f32[2]" in text
    assert "Y[3*i0 + i1 - 1, k] = Yt[(i1 - 1) % 2, k]" in text   # row i1 - 1 stored beside row i1
    assert_same_outputs(parse(ROWS), after)


def test_refused_for_a_missing_loop():
    assert_refused(parse(ROWS), "pipeline i from q", "there is no loop 'q'")


def test_refused_when_the_stage_is_not_directly_in_the_loop():
    assert_refused(parse(matmul_text(4, 4, 4)), "pipeline i from k",
                   "loop 'k' is not directly in the body of 'i'")


def test_refused_for_an_annotated_loop():
    assert_refused(applied(ROWS, "parallelize i"), "pipeline i from l",
                   "annotated loops are not pipelined")


def test_refused_when_the_extent_is_not_constant():
    assert_refused(applied(ROWS, "split i by 4"), "pipeline i1 from l",
                   "the extent of 'i1' is not a constant at these sizes")


def test_refused_for_a_single_iteration():
    assert_refused(parse(ROWS.replace("N = 6", "N = 1")), "pipeline i from l",
                   "loop 'i' runs fewer than 2 iterations")


def test_refused_without_a_first_stage():
    assert_refused(parse(TWO_PASSES), "pipeline i from j",
                   "nothing in 'i' runs before 'j': there is no first stage")


def test_refused_when_two_slots_exceed_a_local():
    assert_refused(parse(WIDE), "pipeline i from k",
                   "two slots of local 't' would hold 1048578 elements")


def test_refused_when_the_next_first_stage_reads_what_the_second_stage_writes():
    assert_refused(parse(CHAIN), "pipeline i from k",
                   "a dependence goes from the statements from 'k' at one iteration of 'i' "
                   "to those before it at the next")


def test_a_second_stage_that_only_reads_is_legal():
    after = applied(TWO_PASSES, "pipeline i from k")
    assert_same_outputs(parse(TWO_PASSES), after)


def test_offered_for_each_later_loop_of_a_row():
    offered = REGISTRY["pipeline"].enumerate(parse(ROWS))
    assert offered == ["pipeline i from k", "pipeline i from l"]
    assert REGISTRY["pipeline"].enumerate(applied(ROWS, "parallelize i")) == []
    assert REGISTRY["pipeline"].enumerate(parse(CHAIN)) == []


def test_never_equal_and_apart_in_loop():
    s0, s1 = ir.Access("s", (ir.BinOp("%", ir.Var("i"), ir.Const(2)),)), \
        ir.Access("s", (ir.BinOp("%", ir.BinOp("-", ir.Var("i"), ir.Const(1)), ir.Const(2)),))
    assert never_equal(s0, s1, {})
    assert not never_equal(ir.Access("s", (ir.Var("i"),)), ir.Access("s", (ir.Var("j"),)), {})
    assert never_equal(ir.Access("s", (ir.Var("i"),)),
                       ir.Access("s", (ir.BinOp("+", ir.Var("i"), ir.Const(1)),)), {})
    assert apart_in_loop(s0, s1, "k", {})
    assert not apart_in_loop(s0, ir.Access("s", (ir.Var("k"),)), "k", {})


def _with_cache(name, nbytes):
    return replace(TARGETS[name], cache_bytes=nbytes)


def test_fused_stages_vectorize_with_one_slot_reduced_and_the_other_read():
    """The fused loop sums into s[i1 % 2] while it divides by s[(i1 - 1) % 2]: the two
    elements never coincide, so vectorize accepts the reduction and the C generator keeps
    it in vector accumulators (no scalar fallback) and streams Y past the cache; compiled,
    both vector widths and generic C at two threads give the interpreter's outputs."""
    steps = SOFTMAX_STEPS + ("parallelize i0", "vectorize j", "vectorize k", "vectorize jp",
                             "vectorize kp", "vectorize le")
    scheduled = applied(ROWS, *steps)
    for isa, lanes in (("x86-avx2", 8), ("x86-avx512", 16)):
        text = generate_c(scheduled, _with_cache(isa, 1 << 10))
        loop = text[text.index("for (int64_t k = 0;"):]
        loop = loop[:loop.index("\n          }")]
        assert f"dojo_stream_f32x{lanes}(&Y[" in loop and "dojo_acc" in loop, loop
    host = detect_host_target()
    x = random_inputs(scheduled, 5)
    want = interp.run(parse(ROWS), x)
    for isa in ("x86-avx2", "x86-avx512", "generic"):
        if isa != "generic" and (host.arch != "x86_64"
                                 or (isa == "x86-avx512" and host.name != isa)):
            continue            # that ISA's code cannot run on this host
        got = harness.run_c(scheduled, x, threads=2, target=_with_cache(isa, 1 << 10))
        assert all(e <= 1 for e in harness.compare(got, want, scheduled).values()), isa


PIPELINE_KERNELS = [n for n in list_kernels()
                    if REGISTRY["pipeline"].enumerate(load_kernel(n, info(n).test_sizes))]


def test_library_row_kernels_are_offered_a_pipeline():
    assert {"softmax", "layernorm"} <= set(PIPELINE_KERNELS)


@pytest.mark.parametrize("name", PIPELINE_KERNELS)
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), pick=st.integers(0, 100))
def test_random_walks_after_a_pipeline_keep_outputs(name, seed, pick):
    """Each kernel offered a pipeline takes one (drawn), then a random walk of 6 legal
    actions: checker clean, same outputs as the untransformed kernel on the interpreter."""
    original = load_kernel(name, info(name).test_sizes)
    offered = REGISTRY["pipeline"].enumerate(original)
    assert_walk_keeps_outputs(original, apply_step(original, offered[pick % len(offered)]), seed)

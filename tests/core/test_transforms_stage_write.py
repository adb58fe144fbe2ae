"""``stage A at L`` where L also writes A (a cache write): golden before/after text, the
load left out or kept, one test per refusal reason, its candidates, the C generator's
streaming stores of the array that the buffer leaves write-only, compiled results, and
random walks after a cache write on the library kernels that are offered one."""
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
from dojo_core.printer import print_program
from dojo_core.transforms import REGISTRY, actions, scope

from kernels_text import SOFTMAX_ROWS as ROWS, kernel_text, with_body
from transform_checks import (applied, assert_refused, assert_same_outputs,
                              assert_walk_keeps_outputs)

# softmax's three passes over a row; Y is written, then read back by the last pass
ROWS_STAGED = """\
for i in 0..N:
  local Yt: f32[M]
  local m: f32
  local s: f32
  m = -inf
  for j in 0..M:
    m max= X[i, j]
  s = 0
  for k in 0..M:
    Yt[k] = exp(X[i, k] - m)
    s += Yt[k]
  for l in 0..M:
    Yt[l] = Yt[l] / s
  for k1 in 0..M:
    Y[i, k1] = Yt[k1]
"""

# an inout row updated by two passes: its old values are read first, so the buffer loads
UPDATE = kernel_text("update(N = 4, M = 16)", "in X: f32[N, M]; inout B: f32[N, M]", """\
for i in 0..N:
  for j in 0..M:
    B[i, j] = B[i, j] * X[i, j]
  for k in 0..M:
    B[i, k] += 1
""")

# a row written in two halves by two statements: no one assignment writes all of it
HALVES = kernel_text("halves(N = 4, M = 8)", "in X: f32[N, M]; out B: f32[N, M]", """\
for i in 0..N:
  for j in 0..M // 2:
    B[i, j] = X[i, j]
  for k in 0..M // 2:
    B[i, M // 2 + k] = B[i, k] + X[i, M // 2 + k]
""")

# a row copied once: written, never read back
COPY = kernel_text("copy(N = 4, M = 16)", "in X: f32[N, M]; out Y: f32[N, M]", """\
for i in 0..N:
  for j in 0..M:
    Y[i, j] = 2 * X[i, j]
""")


def test_golden_softmax_row_kept_in_a_buffer_and_stored_once():
    after = applied(ROWS, "stage Y at i as Yt")
    assert print_program(after) == with_body(ROWS, ROWS_STAGED)
    assert_same_outputs(parse(ROWS), after)


def test_the_load_is_kept_when_the_old_values_are_read():
    after = applied(UPDATE, "stage B at i as Bt")
    assert print_program(after) == with_body(UPDATE, """\
for i in 0..N:
  local Bt: f32[M]
  for j1 in 0..M:
    Bt[j1] = B[i, j1]
  for j in 0..M:
    Bt[j] = Bt[j] * X[i, j]
  for k in 0..M:
    Bt[k] += 1
  for j2 in 0..M:
    B[i, j2] = Bt[j2]
""")
    assert_same_outputs(parse(UPDATE), after)


def test_refused_when_no_one_assignment_writes_the_whole_footprint():
    assert_refused(parse(HALVES), "stage B at i as Bt",
                   "'B' is written inside loop 'i' but no one assignment there writes every "
                   "element of its footprint, so storing the buffer back could write "
                   "elements the loop does not")


def test_refused_in_shared_memory():
    assert_refused(parse(ROWS), "stage Y at i as Yt in shared",
                   "a buffer that is stored back cannot be shared: every thread of the block "
                   "would store it")


def test_refused_when_the_array_is_not_accessed():
    assert_refused(parse(ROWS), "stage Y at j as Yt", "'Y' is not accessed inside loop 'j'")


def test_offered_for_a_row_read_back_and_not_for_a_row_written_once():
    offered = [a.text for a in actions(parse(ROWS)) if a.text.startswith("stage Y ")]
    assert "stage Y at i as Yt" in offered
    assert not [a for a in actions(parse(COPY)) if a.text.startswith("stage Y ")]


def _with_cache(name, nbytes):
    return replace(TARGETS[name], cache_bytes=nbytes)


def test_inside_a_parallel_loop_each_row_streams_to_the_output():
    """Staged, Y is only stored, by the copy loop: past the target's cache its stores
    stream (without the stage Y is read back and never streams); compiled, both vector
    widths give the interpreter's outputs."""
    steps = ("parallelize i", "stage Y at i as Yt", "vectorize j", "vectorize k",
             "vectorize l", "vectorize k1")
    staged = applied(ROWS, *steps)
    plain = applied(ROWS, *steps[:1], *steps[2:5])
    for isa, lanes in (("x86-avx2", 8), ("x86-avx512", 16)):
        target = _with_cache(isa, 1 << 10)
        text = generate_c(staged, target)
        assert f"dojo_stream_f32x{lanes}(&Y[" in text and f"dojo_store_f32x{lanes}(&Yt[" in text
        assert "dojo_stream" not in generate_c(plain, target)
        assert "dojo_stream" not in generate_c(staged, _with_cache(isa, 64 << 20))
    host = detect_host_target()
    x = random_inputs(staged, 5)
    want = interp.run(parse(ROWS), x)
    for isa in ("x86-avx2", "x86-avx512", "generic"):
        if isa != "generic" and (host.arch != "x86_64"
                                 or (isa == "x86-avx512" and host.name != isa)):
            continue            # that ISA's code cannot run on this host
        got = harness.run_c(staged, x, threads=2, target=_with_cache(isa, 1 << 10))
        assert all(e <= 1 for e in harness.compare(got, want, staged).values()), isa


def _write_stages(program):
    """The stage candidates of ``program`` that buffer an array their loop writes."""
    out = []
    for text in REGISTRY["stage"].enumerate(program):
        array, loop = text.split()[1], text.split()[3]
        body = scope.loop_table(program)[loop][0].body
        if array in {s.target.array for s in ir.assignments(body)}:
            out.append(text)
    return out


WRITE_STAGE_KERNELS = [n for n in list_kernels()
                       if _write_stages(load_kernel(n, info(n).test_sizes))]


def test_library_kernels_with_rows_read_back_are_offered_the_cache_write():
    assert {"softmax", "attention"} <= set(WRITE_STAGE_KERNELS)


@pytest.mark.parametrize("name", WRITE_STAGE_KERNELS)
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), pick=st.integers(0, 100))
def test_random_walks_after_a_cache_write_keep_outputs(name, seed, pick):
    """Each kernel offered a cache write takes one (drawn), then a random walk of 6 legal
    actions: checker clean, same outputs as the untransformed kernel on the interpreter."""
    original = load_kernel(name, info(name).test_sizes)
    stages = _write_stages(original)
    staged = applied(print_program(original), stages[pick % len(stages)])
    assert_walk_keeps_outputs(original, staged, seed)

"""Parallel loops in the generated C (dojo_core/codegen/parallel.py): a parallel loop without
explicit vector code becomes an outlined function with ``restrict`` parameters called from
an OpenMP region; the outputs equal the interpreter's at one and two threads; the cases
it declines keep an inline ``omp parallel for``. Vector stores into an output the kernel
only writes stream (non-temporal) past the cache, fenced by every thread.

Regenerate the golden C (after reviewing the change!) with
pytest tests/core/test_codegen_parallel.py -k golden --update-goldens.
"""
from __future__ import annotations


import pytest

from dojo_core import harness, interp, ir
from dojo_core.codegen import generate_c
from dojo_core.codegen.parallel import varying_work
from dojo_core.kernels import random_inputs
from dojo_core.printer import print_program
from dojo_core.source import load_source
from dojo_core.suite import load as load_suite
from dojo_core.walks import replay

from kernels_text import kernel_text


TWO_GEMMS = load_suite("k2mm", "f32", "test")

NESTED = kernel_text("nested(B = 3, N = 37)",
                     "in X: f32[B, N]; out Y: f32[B, N]; out Z: f32[B]", """\
for b in 0..B:
  local s: f32
  local row: f32[N]
  s = X[b, 0] + 1
  for c in 0..N:
    row[c] = X[b, c] * 2
  for i in 0..N parallel:
    Y[b, i] = row[i] * s + b
  Z[b] = s
""")

WRITES_OUTER_SCALAR = kernel_text("carried(N = 1)", "in X: f32[N]; out Y: f32[N]", """\
local s: f32
s = 0
for i in 0..N parallel:
  s += X[i]
for j in 0..N:
  Y[j] = s
""")


def assert_matches_interp(program, threads):
    inputs = random_inputs(program, 3)
    got = harness.run_c(program, inputs, opt="-O2", threads=threads)
    errors = harness.compare(got, interp.run(program, inputs), program)
    assert all(e <= 1 for e in errors.values()), \
        f"{errors} at {threads} threads\n{print_program(program)}\n{generate_c(program)}"


def test_golden_parallel_outer_loops_are_outlined(golden):
    program = replay(TWO_GEMMS, ["parallelize i", "parallelize i2"])
    text = generate_c(program, "x86-avx2")
    golden("c/k2mm_parallel.c", text)
    assert text.count("#pragma omp parallel\n") == 2 and "omp parallel for" not in text
    assert ("static void dojo_kernel_par1(int64_t dojo_lo, int64_t dojo_hi, "
            "const float *restrict alpha, float *restrict tmp, const float *restrict A, "
            "const float *restrict B)") in text


@pytest.mark.parametrize("threads", [1, 2])
def test_outlined_loops_compute_what_the_interpreter_does(threads):
    assert_matches_interp(replay(TWO_GEMMS, ["parallelize i", "parallelize i2"]), threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_enclosing_iterators_and_locals_reach_the_outlined_function(threads):
    program = load_source(NESTED)
    text = generate_c(program, "x86-avx2")
    assert ("static void dojo_kernel_par1(int64_t dojo_lo, int64_t dojo_hi, "
            "float *restrict Y, const float *restrict row, int64_t b, float s)") in text
    assert_matches_interp(program, threads)


def test_a_loop_writing_an_enclosing_scalar_stays_inline():
    program = load_source(WRITES_OUTER_SCALAR)
    text = generate_c(program, "x86-avx2")
    assert "#pragma omp parallel for" in text and "_par1(" not in text
    assert_matches_interp(program, 1)


def test_a_parallel_loop_holding_explicit_vector_code_stays_inline():
    program = replay(TWO_GEMMS, ["parallelize i2", "vectorize k2"])
    text = generate_c(program, "x86-avx2")
    assert "#pragma omp parallel for" in text and "_par1(" not in text


def test_code_without_openmp_calls_the_function_over_the_whole_range():
    text = generate_c(replay(TWO_GEMMS, ["parallelize i"]), "x86-avx2")
    assert ("#else\n    if (dojo_lo < dojo_hi) dojo_kernel_par1(dojo_lo, dojo_hi, alpha, tmp, A, B);"
            "\n    #endif") in text


SEIDEL_WALK = ["split j by 2", "accumulate A at j0 as acc", "split j3 by 2", "merge j0 j1",
               "parallelize c2", "stage A at j2 as At in register", "parallelize c1",
               "layout acc 1 0"]


def test_threads_never_store_their_neighbours_elements():
    """Each thread writes acc[j2, c1] for its own c1; gcc's predictive commoning stored the
    next c1's elements back after the loop (another thread's: wrong results in about one
    run in ten at two threads). The outlined bodies are compiled without that pass."""
    original = load_suite("seidel_2d", "f64", "test")
    program = replay(original, SEIDEL_WALK)
    text = generate_c(program, "x86-avx2")
    assert '__attribute__((optimize("no-predictive-commoning")))' in text
    assert "DOJO_PARALLEL_BODY static void dojo_kernel_par1(" in text
    from dojo_core.suite import random_inputs as suite_inputs
    inputs = suite_inputs("seidel_2d", original, 0)
    want = interp.run(original, inputs)
    lib = harness.build(program, opt="-O3")
    for run in range(40):
        got = harness.run_c(program, inputs, threads=2, library=lib)
        errors = harness.compare(got, want, original)
        assert all(e <= 1 for e in errors.values()), f"run {run}: {errors}"


TRIANGLE = kernel_text("triangle(N = 9)", "in X: f32[N, N]; out Y: f32[N, N]", """\
for i in 0..N:
  for j in 0..N:
    Y[i, j] = 0
for i2 in 0..N:
  for j2 in i2 + 1..N parallel:
    Y[i2, j2] = X[i2, j2] + X[j2, i2]
""")


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_shares_of_a_triangular_range_and_its_empty_last_row(threads):
    """Each thread's share lies within the loop's bounds, which the outlined function tells
    gcc (``__builtin_unreachable`` otherwise); an empty share, and an empty range (the last
    row, j2 from N to N), calls nothing."""
    program = load_source(TRIANGLE)
    text = generate_c(program, "x86-avx2")
    assert "if (dojo_lo < i2 + 1 || dojo_hi > N) __builtin_unreachable();" in text
    assert "if (dojo_b < dojo_e) dojo_kernel_par1(dojo_b, dojo_e, X, Y, i2);" in text
    assert_matches_interp(program, threads)


LOWER_ROWS = kernel_text("lower(N = 13)", "in X: f32[N, N]; out Y: f32[N, N]", """\
for i in 0..N:
  for j in 0..N:
    Y[i, j] = 0
for i2 in 0..N parallel:
  for j2 in 0..i2 + 1:
    Y[i2, j2] = X[i2, j2] * 2 + X[j2, i2]
""")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_rows_of_unequal_work_are_dealt_round_robin(threads):
    """Row i2 of a lower triangle holds i2 + 1 points: contiguous shares would leave the
    last thread most of them, so each thread takes every nt-th row."""
    program = load_source(LOWER_ROWS)
    text = generate_c(program, "x86-avx2")
    assert "for (int64_t dojo_i = dojo_lo + dojo_t; dojo_i < dojo_hi; dojo_i += dojo_nt)" in text
    assert "dojo_kernel_par1(dojo_i, dojo_i + 1, X, Y);" in text
    assert "dojo_b < dojo_e" not in text
    assert_matches_interp(program, threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_an_inline_loop_of_unequal_rows_is_scheduled_round_robin(threads):
    program = replay(load_source(LOWER_ROWS.replace(" parallel:", ":")),
                     ["split j2 by 4", "partition j20", "vectorize j21", "parallelize i2"])
    text = generate_c(program, "x86-avx2")
    assert "#pragma omp parallel for schedule(static, 1)" in text and "_par1(" not in text
    assert_matches_interp(program, threads)


def test_partial_tiles_and_clipped_bounds_do_not_make_work_unequal():
    tiled = replay(load_source(LOWER_ROWS.replace(" parallel:", ":")), ["split j by 4"])
    outer = next(l for l in ir.loops(tiled) if l.iterator == "j0")
    assert not varying_work(outer)                # j1 in 0..min(4, N - 4*j0): only the edge
    split_rows = replay(load_source(LOWER_ROWS), ["split j2 by 4"])
    assert varying_work(next(l for l in ir.loops(split_rows) if l.iterator == "i2"))
    rows = next(l for l in ir.loops(load_source(LOWER_ROWS)) if l.iterator == "i2")
    assert varying_work(rows)
    assert not varying_work(next(l for l in ir.loops(load_source(LOWER_ROWS))
                                 if l.iterator == "i"))


# --------------------------------------------------------------------------- streaming stores

def _layernorm(sizes):
    from dojo_core.kernels import load_kernel, steps_path
    from dojo_core.steps import read_steps
    program = load_kernel("layernorm", sizes)
    return replay(program, [t for _, t in read_steps(steps_path("layernorm"))])


def _with_cache(name, nbytes):
    from dataclasses import replace

    from dojo_core.codegen import TARGETS
    return replace(TARGETS[name], cache_bytes=nbytes)


def test_golden_streaming_stores_past_the_cache(golden):
    """Layernorm's output is only written: with arrays larger than the target's cache its
    vector stores stream (non-temporal), and every thread fences them before the parallel
    region's barrier; the kernel fences its own at the end."""
    text = generate_c(_layernorm(None), _with_cache("x86-avx2", 1 << 20))
    golden("c/layernorm_streaming.c", text)
    assert "dojo_stream_f32x8(&Y[" in text and "_mm256_stream_ps" in text
    assert "#pragma omp parallel\n  {\n    #pragma omp for nowait\n" in text
    assert text.count("dojo_sfence();") == 2


def test_no_streaming_stores_within_the_cache_or_into_arrays_read_back():
    """Arrays that fit in the cache keep ordinary stores (their reader may find them there),
    and so does an output the kernel reads again (softmax divides Y in place); a target
    with an unknown cache size (0) never streams."""
    from dojo_core.kernels import load_kernel, steps_path
    from dojo_core.steps import read_steps
    program = _layernorm(None)
    assert "stream" not in generate_c(program, _with_cache("x86-avx2", 64 << 20))
    assert "stream" not in generate_c(program, _with_cache("x86-avx512", 0))
    softmax = replay(load_kernel("softmax"), [t for _, t in read_steps(steps_path("softmax"))])
    assert "stream" not in generate_c(softmax, _with_cache("x86-avx512", 1 << 10))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("isa", ["x86-avx512", "x86-avx2", "generic"])
def test_streamed_outputs_equal_the_interpreter(isa, threads):
    """Rows of 75 floats (300 bytes): most rows start unaligned, so the vectors of a row take
    both the streaming store and its ordinary fallback, then the narrower segments and the
    scalar remainder."""
    from dojo_core.codegen import detect_host_target
    host = detect_host_target()
    if isa != "generic" and (host.arch != "x86_64" or (isa == "x86-avx512"
                                                       and host.name != "x86-avx512")):
        pytest.skip(f"{isa} code does not run here")
    program = _layernorm({"N": 19, "M": 75})
    target = _with_cache(isa, 1 << 10)
    if isa != "generic":
        assert "dojo_stream_f32x" in generate_c(program, target)
    inputs = random_inputs(program, 3)
    got = harness.run_c(program, inputs, target=target, opt="-O2", threads=threads)
    errors = harness.compare(got, interp.run(program, inputs), program)
    assert all(e <= 1 for e in errors.values()), errors

"""The prefetch statement (parser, printer, checker, interpreter, statement names, the other
transformations around it, C and CUDA code) and the ``prefetch X at L`` transformation:
golden before/after text, one test per refusal reason, its candidates, compiled results."""
from __future__ import annotations


import pytest

from dojo_core import harness, interp, ir
from dojo_core.checker import check
from dojo_core.codegen import generate_c
from dojo_core.codegen.cuda import generate_cuda
from dojo_core.codegen.line_map import generate_c_mapped
from dojo_core.codegen.targets import TARGETS
from dojo_core.kernels import load_kernel, random_inputs
from dojo_core.parser import parse
from dojo_core.printer import line_refs, print_program
from dojo_core.transforms import actions, apply_step
from dojo_core.transforms.prefetch import MAX_PREFETCH_ELEMENTS, MAX_PREFETCH_ROWS
from dojo_core.transforms.util import find_ref
from dojo_core.walks import random_walk

from kernels_text import head, kernel_text
from transform_checks import applied, assert_refused, assert_same_outputs

TILE = kernel_text("tile(N = 12, M = 32, K = 8)",
                   "in A: f32[N, K]; in B: f32[K, M]; out C: f32[N, M]", """\
for j0 in 0..M // 16:
  for i0 in 0..N // 3:
    for i1 in 0..3:
      for j1 in 0..16:
        C[3*i0 + i1, 16*j0 + j1] = 0
    for k in 0..K:
      for i2 in 0..3:
        for j2 in 0..16:
          C[3*i0 + i2, 16*j0 + j2] += A[3*i0 + i2, k] * B[k, 16*j0 + j2]
""")

PREFETCHED = TILE.replace("  for i0 in 0..N // 3:\n",
                          "  for i0 in 0..N // 3:\n"
                          "    prefetch C[3*i0 + 3..3*i0 + 6, 16*j0..16*j0 + 16]\n")


pytestmark = pytest.mark.usefixtures("module_compile_cache")


# ----------------------------------------------------------------------------- the statement

def test_parse_print_round_trip_and_shorthand():
    text = kernel_text("p(N = 8, M = 8)", "in A: f32[N, M]; out B: f32[N, M]", """\
for i in 0..N:
  prefetch A[i + 1, 0..M]
  prefetch B[min(i + 1, N - 1)..N, 2*i..2*i + 3]
  for j in 0..M:
    B[i, j] = A[i, j]
""")
    p = parse(text)
    stmt = p.body[0].body[0]
    assert stmt == ir.Prefetch("A", ((parse_expr("i + 1"), parse_expr("i + 1 + 1")),
                                     (ir.Const(0), ir.Var("M"))))
    assert print_program(p) == text
    assert parse(print_program(p)) == p
    # the shorthand is read as e..e + 1 and printed back as e
    longhand = text.replace("prefetch A[i + 1, 0..M]", "prefetch A[i + 1..i + 1 + 1, 0..M]")
    assert print_program(parse(longhand)) == text
    assert check(p) == []


def parse_expr(text):
    program = parse(f"kernel e(N = 4)\nout X: f32[N]\n\nfor i in 0..N:\n  X[i] = {text}\n")
    return program.body[0].body[0].value


@pytest.mark.parametrize("line, message", [
    ("prefetch Q[i]", "unknown array 'Q'"),
    ("prefetch A[i]", "'A' has rank 2 but the prefetch gives 1 range"),
    ("prefetch A[i*i, 0..M]", "non-affine bound 'i * i'"),
    ("prefetch A[q, 0..M]", "unknown name 'q'"),
    ("prefetch t[0]", "prefetch takes an array of the kernel; 't' is a local"),
    ("prefetch s[0]", "'s' is a scalar: nothing to prefetch"),
])
def test_checker_errors_are_located(line, message):
    text = kernel_text("p(N = 8, M = 8)", "in A: f32[N, M]; in s: f32; out B: f32[N, M]", f"""\
for i in 0..N:
  local t: f32[4]
  {line}
  for j in 0..M:
    B[i, j] = A[i, j] + s
""")
    errors = check(parse(text, "p.dojo"), "p.dojo")
    assert errors, text
    assert str(errors[0]).startswith("p.dojo:8:"), str(errors[0])
    assert errors[0].message.startswith(message), errors[0].message


def test_iterator_out_of_scope_is_an_error():
    text = kernel_text("p(N = 8)", "in A: f32[N]; out B: f32[N]", """\
for i in 0..N:
  B[i] = A[i]
for j in 0..N:
  prefetch A[i]
  B[j] += 1
""")
    errors = check(parse(text, "p.dojo"), "p.dojo")
    assert [e.message for e in errors] == ["iterator 'i' is not in scope here"]


def test_statement_names_count_prefetches():
    p = parse(PREFETCHED)
    refs = line_refs(p)
    assert refs[8] == "s0" and refs[11] == "s1" and refs[15] == "s2"
    stmt, path = find_ref(p, "s0")
    assert isinstance(stmt, ir.Prefetch) and path == [0, 0, 0]
    assert isinstance(find_ref(p, "s1")[0], ir.Assign)


def test_interpreter_ignores_prefetches():
    before, after = parse(TILE), parse(PREFETCHED)
    x = random_inputs(before, 1)
    for vectorize in (True, False):
        got, want = interp.run(after, x, vectorize), interp.run(before, x, vectorize)
        assert (got["C"] == want["C"]).all()


# ----------------------------------------------------------------------------- other transformations

def test_other_transformations_carry_the_prefetch():
    p = applied(PREFETCHED, "split i0 by 2")
    assert "prefetch C[6*i00 + 3*i01 + 3..6*i00 + 3*i01 + 6, 16*j0..16*j0 + 16]" \
        in print_program(p)
    q = applied(PREFETCHED, "interchange j0 i0")
    assert "  for j0 in 0..M // 16:\n    prefetch C[3*i0 + 3" in print_program(q)
    r = applied(PREFETCHED, "fission i0 after i1")
    assert print_program(r).count("prefetch") == 1
    s = applied(PREFETCHED, "unroll i1", "parallelize j0", "vectorize j2")
    for program in (p, q, r, s):
        assert_same_outputs(parse(TILE), program)
    assert_refused(parse(PREFETCHED), "hoist s0", "'s0' is a prefetch")


def test_partition_renames_and_layout_permutes_the_box():
    tails = kernel_text("pt(N = 10, M = 8)", "in A: f32[N, M]; out B: f32[N, M]", """\
for i0 in 0..(N + 3) // 4:
  for i1 in 0..min(4, N - 4*i0):
    prefetch A[4*i0 + i1 + 1, 0..M]
    for j in 0..M:
      B[4*i0 + i1, j] = A[4*i0 + i1, j]
""")
    p = applied(tails, "partition i0")
    assert "prefetch A[4 * (N // 4) + i1t + 1, 0..M]" in print_program(p)
    assert_same_outputs(parse(tails), p)
    temp = kernel_text("lt(N = 8, M = 4)", "in A: f32[N, M]; temp T: f32[N, M]; "
                       "out B: f32[N, M]", """\
for i in 0..N:
  prefetch T[i + 1, 0..M]
  for j in 0..M:
    T[i, j] = A[i, j] * 2
for i2 in 0..N:
  for j2 in 0..M:
    B[i2, j2] = T[i2, j2]
""")
    q = applied(temp, "layout T 1 0")
    assert "  prefetch T[0..M, i + 1]\n" in print_program(q)
    assert_same_outputs(parse(temp), q)


def test_highlighting():
    from pygments.token import Keyword, Name
    from dojo_core.highlight import DojoLexer
    tokens = list(DojoLexer().get_tokens("    prefetch C[3*i0 + 3..3*i0 + 6, 16*j0]\n"))
    assert (Keyword, "prefetch") in tokens and (Name.Variable, "C") in tokens


def test_random_walks_over_a_program_with_a_prefetch():
    original = parse(PREFETCHED)
    for seed in range(3):
        texts, final = random_walk(original, 8, seed)
        assert check(final) == [], texts
        assert_same_outputs(parse(TILE), final)


# ----------------------------------------------------------------------------- prefetch X at L

def test_golden():
    p = applied(TILE, "prefetch C at i0")
    assert print_program(p) == PREFETCHED
    assert_same_outputs(parse(TILE), p)


def test_candidates_skip_streams():
    texts = [a.text for a in actions(parse(TILE)) if a.kind == "prefetch"]
    # C's next tile (3 rows, M apart) is not contiguous with this one: offered; so are B's
    # next row at k and the next rows of C and A at the row loops i1, i2. Streams are not
    # offered: at j0 every row of C's and B's panels continues (16 columns on), A's box is
    # the same; at i0 A's 3 whole rows are followed by the next 3; at k A's column moves by
    # one element along each row. Innermost loops (j1, j2) are never candidates.
    assert texts == ["prefetch C at i0", "prefetch C at i1", "prefetch B at k",
                     "prefetch C at i2", "prefetch A at i2"]


ROW_STREAM = kernel_text("rows(N = 8, M = 64)", "in A: f32[N, M]; out B: f32[N, M]", """\
for i in 0..N:
  for j in 0..M:
    B[i, j] = A[i, j]
""")


def test_contiguous_rows_are_not_candidates():
    assert [a.text for a in actions(parse(ROW_STREAM)) if a.kind == "prefetch"] == []
    # legal all the same when asked for
    p = applied(ROW_STREAM, "prefetch A at i")
    assert "  prefetch A[i + 1, 0..M]\n" in print_program(p)


BIG = kernel_text("big(N = 130, M = 2048)", "in A: f32[N, M]; out B: f32[N]", """\
for i0 in 0..N // 65:
  for i1 in 0..65:
    B[65*i0 + i1] = 0
    for j in 0..8:
      B[65*i0 + i1] += A[65*i0 + i1, 256*j]
for r0 in 0..N // 5:
  for r1 in 0..5:
    for c in 0..M:
      B[5*r0 + r1] += A[5*r0 + r1, c]
""")


@pytest.mark.parametrize("program, step, reason", [
    (TILE, "prefetch C at q", "there is no loop 'q'"),
    (TILE, "prefetch Z at i0", "there is no array 'Z' of the kernel"),
    (TILE.replace("A[3*i0 + i2, k]", "1"), "prefetch A at i0",
     "'A' is not accessed inside loop 'i0'"),
    (applied(TILE, "bind j0 gpu.block.x"), "prefetch C at i0",
     "loop 'i0' is bound to the GPU grid or inside a bound loop"),
    (applied(TILE, "vectorize j2"), "prefetch C at j2",
     "loop 'j2' is a vector loop or inside one"),
    (TILE.replace("C[3*i0 + i2, 16*j0 + j2] +=", "C[(i0 * i0) % 12, 16*j0 + j2] +=")
     .replace("for i2 in 0..3:\n        for j2", "for i2 in 0..1:\n        for j2"),
     "prefetch C at i0", "the footprint of 'C' in the next iteration of 'i0' is not a box"),
    (BIG, "prefetch A at i0", f"the next iteration's box of 'A' in loop 'i0' has 65 rows "
                              f"(at most {MAX_PREFETCH_ROWS})"),
    (PREFETCHED, "prefetch C at i0", "loop 'i0' already prefetches 'C'"),
])
def test_refusals(program, step, reason):
    program = parse(program) if isinstance(program, str) else program
    assert_refused(program, step, reason)


def test_the_element_limit():
    assert MAX_PREFETCH_ELEMENTS == 1024
    assert_refused(parse(BIG), "prefetch A at r0",
                   f"the next iteration's box of 'A' in loop 'r0' has {5 * 2048} elements "
                   f"(at most {MAX_PREFETCH_ELEMENTS})")


# ----------------------------------------------------------------------------- generated code

def test_golden_c(golden):
    text = generate_c(parse(PREFETCHED), "x86-avx2")
    golden("c/prefetch.c", text)
    assert "__builtin_prefetch(&C[dojo_po" in text and ", 1, 3);" in text
    assert "dojo_clamp(" in text


@pytest.mark.parametrize("target", ["x86-avx512", "x86-avx2", "arm-neon", "arm-sve",
                                    "riscv-rvv", "generic"])
def test_every_c_target_prefetches(target):
    assert TARGETS[target].cache_line_bytes == 64
    text = generate_c(parse(PREFETCHED), target)
    assert text.count("__builtin_prefetch(") == 2       # lines a line apart, then the last


def test_read_only_arrays_prefetch_for_reading_and_line_size_comes_from_the_target():
    from dataclasses import replace
    p = applied(ROW_STREAM, "prefetch A at i")
    text = generate_c(p, "x86-avx2")
    assert "__builtin_prefetch(&A[dojo_po" in text and ", 0, 3);" in text
    assert "+= 16)" in text                     # 64-byte lines of f32
    wide = generate_c(p, replace(TARGETS["x86-avx2"], cache_line_bytes=128))
    assert "+= 32)" in wide and "+= 16)" not in wide


def test_compiled_results_match_the_interpreter():
    original = parse(TILE)
    x = random_inputs(original, 2)
    want = interp.run(original, x)
    for p in (parse(PREFETCHED), applied(TILE, "prefetch B at k", "prefetch A at i0",
                                         "parallelize j0")):
        got = harness.run_c(p, x, threads=2)
        assert all(e <= 1 for e in harness.compare(got, want, p).values())


def test_line_map_and_cuda():
    p = parse(PREFETCHED)
    mapped = generate_c_mapped(p, "x86-avx2")
    lines = mapped.text.split("\n")
    assert any("__builtin_prefetch" in lines[k - 1] for k in mapped.c_lines_of(8))
    cuda = generate_cuda(p)
    assert "/* prefetch C[3*i0 + 3..3*i0 + 6, 16*j0..16*j0 + 16]: a CPU cache hint, no GPU " \
           "code */" in cuda
    assert "__builtin_prefetch" not in cuda
    assert generate_cuda(parse(TILE)).split("\n")[1:] == \
        [line for line in cuda.split("\n")[1:] if "CPU cache hint" not in line]


def test_the_avx2_matmul_schedule_prefetches_the_next_tile_of_c():
    """matmul.x86-avx2.steps ends with the prefetch of the next row tile's C (measured
    faster, see its header); the AVX-512 schedule does not (measured no faster)."""
    from dojo_core.kernels import steps_path
    from dojo_core.steps import read_steps, replay
    avx2 = [t for _, t in read_steps(steps_path("matmul", "x86-avx2"))]
    assert avx2[-1] == "prefetch C at i0"
    assert not any(t.startswith("prefetch") for _, t in read_steps(steps_path("matmul")))
    program = replay(load_kernel("matmul", {"N": 64, "M": 64, "K": 512}), avx2)
    assert "  prefetch C[6*i0 + 6..6*i0 + 12, 16*j0..16*j0 + 16]\n" in print_program(program)
    assert generate_c(program, "x86-avx2").count("__builtin_prefetch(&C[") == 2


# ------------------------------------------------------------------------ prefetch X at L ahead O

ROWS = kernel_text("rows(N = 6, M = 128)", "in X: f32[N, M]; out Y: f32[N, M]", """\
for i in 0..N:
  local m: f32
  m = -inf
  for j in 0..M:
    m max= X[i, j]
  for k in 0..M:
    Y[i, k] = exp(X[i, k] - m)
""")

ROWS_AHEAD = ROWS.replace("  for k in 0..M:\n",
                          "  for k in 0..M:\n    prefetch X[i + 1, k]\n")


def test_golden_ahead():
    p = applied(ROWS, "prefetch X at k ahead i")
    assert print_program(p) == ROWS_AHEAD
    assert_same_outputs(parse(ROWS), p)


def test_ahead_of_the_loop_itself_is_the_plain_form():
    from dojo_core.transforms.prefetch import PREFETCH as t
    assert t.parse(["X", "at", "k", "ahead", "i"]) == ("X", "k", "i")
    assert t.parse(["X", "at", "k", "ahead", "k"]) == ("X", "k", None) == \
        t.parse(["X", "at", "k"])
    assert t.format(("X", "k", "i")) == "prefetch X at k ahead i"
    assert t.format(("X", "k", None)) == "prefetch X at k"


def test_candidates_ahead_are_streams_of_innermost_loops_whose_next_row_is_elsewhere():
    """At j and k, X streams along the row and two passes go over it, so the stream
    restarts at each row's first line: offered ahead of i. Y, written in one pass, rows
    contiguous, is one stream from the first row to the last (as A of ROW_STREAM): not
    offered. In TILE no innermost loop gets one: there the outermost loop j0 moves C's and
    B's columns along their rows (the stream the loop is on already)."""
    texts = [a.text for a in actions(parse(ROWS)) if a.kind == "prefetch"]
    assert texts == ["prefetch X at j ahead i", "prefetch X at k ahead i"]
    assert not any("ahead" in a.text for a in actions(parse(TILE)))
    assert not any("ahead" in a.text for a in actions(parse(ROW_STREAM)))
    one_pass = ROWS.replace("m max= X[i, j]", "m max= 1")
    assert not any("ahead" in a.text for a in actions(parse(one_pass)))
    # legal all the same when asked for
    assert "    prefetch Y[i + 1, k]\n" in print_program(applied(ROWS, "prefetch Y at k ahead i"))


def test_ahead_goes_into_a_vector_loop_when_its_box_is_one_element():
    p = applied(ROWS, "vectorize k", "prefetch X at k ahead i")
    assert "  for k in 0..M vector:\n    prefetch X[i + 1, k]\n" in print_program(p)
    assert_same_outputs(parse(ROWS), p)


DIFFS = kernel_text("diffs(N = 6, M = 64)", "in X: f32[N, M]; out Y: f32[N, M]", """\
for i in 1..N:
  for k in 0..M:
    Y[i, k] = X[i, k] - X[i - 1, k]
""")


def test_ahead_asks_only_for_the_rows_the_current_iteration_does_not_read():
    """Rows i and i - 1 are read at k; in the next iteration of i, rows i + 1 and i: row i
    is being read already, so the box is row i + 1 alone, one element, and the loop can
    still be vectorized (the pipelined softmax's fused loop reads two rows like this)."""
    p = applied(DIFFS, "prefetch X at k ahead i", "vectorize k")
    assert "  for k in 0..M vector:\n    prefetch X[i + 1, k]\n" in print_program(p)
    assert "__builtin_prefetch(&X[(dojo_clamp(i + 1, 6)) * 64 + dojo_clamp(k, 64)], 0, 3);" \
        in generate_c(p, "x86-avx2")
    assert_same_outputs(parse(DIFFS), p)


def test_an_overlapping_next_box_is_cut_to_its_new_rows():
    """Rows i..i + 2 at i, rows i + 1..i + 3 next: only row i + 3 is new."""
    window = kernel_text("window(N = 8, M = 32)", "in X: f32[N, M]; out Y: f32[N, M]", """\
for i in 0..N - 2:
  for k in 0..M:
    Y[i, k] = X[i, k] + X[i + 1, k] + X[i + 2, k]
""")
    p = applied(window, "prefetch X at i")
    assert "  prefetch X[i + 3, 0..M]\n" in print_program(p)
    assert_same_outputs(parse(window), p)


PAIRS = kernel_text("pairs(N = 6, M = 48)", "in X: f32[N, M]; out Y: f32[N, M]", """\
for i in 0..N:
  for k in 0..M - 1:
    Y[i, k] = X[i, k] + X[i, k + 1]
""")


@pytest.mark.parametrize("program, step, reason", [
    (ROWS, "prefetch X at k ahead q", "loop 'q' is not a loop around loop 'k'"),
    (applied(PAIRS, "vectorize k"), "prefetch X at k ahead i",
     "loop 'k' is a vector loop or inside one"),
    (ROWS_AHEAD, "prefetch X at k ahead i", "loop 'k' already prefetches 'X'"),
    (applied(PAIRS, "prefetch X at k ahead i"), "vectorize k",
     "loop 'k' prefetches more than one element of 'X' per iteration"),
])
def test_refusals_ahead(program, step, reason):
    program = parse(program) if isinstance(program, str) else program
    assert_refused(program, step, reason)


@pytest.mark.parametrize("target, per_line", [("x86-avx2", 2), ("x86-avx512", 1)])
def test_a_vector_loop_asks_for_each_line_of_the_next_row_once(target, per_line):
    """f32, 64-byte lines: an AVX-512 vector is one line, so every vector iteration asks
    for one; AVX2's two vectors per line ask at the first of each pair (the loop's
    reduction-free main body runs one vector an iteration, so there every iteration asks)."""
    p = applied(ROWS, "vectorize j", "vectorize k", "prefetch X at k ahead i",
                "prefetch X at j ahead i")
    text = generate_c(p, target)
    assert "__builtin_prefetch(&X[(dojo_clamp(i + 1, 6)) * 128 + dojo_clamp(j, 128)], 0, 3);" \
        in text
    lanes = TARGETS[target].vector_bytes // 4
    shifted = [f"dojo_clamp(j + {u * lanes}, 128)], 0, 3);" for u in range(1, 4)]
    # the max reduction's four accumulators: iterations 0..3 of a group
    asked = [s in text for s in shifted]
    assert asked == [per_line == 1, True, per_line == 1]
    assert "for (int64_t" in text and "omp simd" not in text


def test_compiled_results_with_prefetches_in_vector_loops_match_the_interpreter():
    original = parse(ROWS)
    x = random_inputs(original, 4)
    want = interp.run(original, x)
    p = applied(ROWS, "parallelize i", "vectorize j", "vectorize k",
                "prefetch X at k ahead i", "prefetch Y at k ahead i", "prefetch X at j ahead i")
    got = harness.run_c(p, x, threads=2, target="x86-avx2")
    assert all(e <= 1 for e in harness.compare(got, want, p).values())

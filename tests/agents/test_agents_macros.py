"""Macro moves (dojo_core/agents/macros.py): generic register tiling that reaches the
library's expert structures, built from legal steps only, and keeping the kernel's outputs."""
from __future__ import annotations

import re

import numpy as np
import pytest

from dojo_core import interp
from dojo_core.agents.macros import (last_dim_layout, distribute_steps, macro_moves,
                                     row_prefetch_moves, tile_moves, vectorize_inner_steps)
from dojo_core.kernels import load_kernel, random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.walks import replay

SMALL = {"matmul": {"N": 32, "M": 64, "K": 48},
         "conv2d": {"N": 1, "C": 32, "H": 4, "W": 24, "F": 32},     # 24: transposed tiles too
         "bmm": {"B": 2, "N": 16, "M": 32, "K": 24},
         "attention": {"S": 32, "D": 16},
         "gemv": {"N": 64, "K": 32}}


# the expert structures below are AVX-512's (16 f32 lanes, 32 registers): 8 x 32 tiles
WIDE = "x86-avx512"


def _move(program, label):
    found = [m for m in tile_moves(program, WIDE) if m.label == label]
    assert found, sorted(m.label for m in tile_moves(program, WIDE))
    return found[0]


def test_whole_reduction_tile_is_the_expert_gemm():
    program = load_kernel("matmul")
    move = _move(program, "tile i2/8 x j2/32 x k/all b-outer stage B")
    text = print_program(replay(program, move.steps))
    assert "local Bp: f32[K, 32]" in text                    # a packed K x 32 panel of B
    assert "local acc: f32[8, 32] in register" in text
    assert "for k in 0..K:" in text                           # the tile runs all of k
    assert "for j0 in 0..M // 32 parallel:" in text           # b0 outermost, in parallel
    # C's zeroing is fused into the tile, which starts at zero instead of loading it
    assert "acc[i2, j2] = 0" in text and "C[i, j] = 0" not in text
    assert "prefetch C[8*i0 + 8..8*i0 + 16, 32*j0..32*j0 + 32]" in text
    assert "vectorize j21" in move.steps and "unroll i21" in move.steps
    # the copies of the register tile stay scalar (gcc keeps the tile in registers then)
    assert not {"vectorize j2", "vectorize j3"} & set(move.steps)


def test_transposed_tile_when_the_row_has_no_full_vector():
    """conv2d's rows are 56 wide (no multiple of 16): the output channels become the vector
    loop, with the tile and the staged weights laid out channel-last."""
    program = load_kernel("conv2d")
    move = _move(program, "tile w2/8 x f2/32 x c/all b-outer stage Wt")
    assert "layout acc 1 0" in move.steps and "layout Wtp 1 2 3 0" in move.steps
    text = print_program(replay(program, move.steps))
    assert "local Wtp: f32[C, 3, 3, 32]" in text and "local acc: f32[8, 32] in register" in text
    assert "acc[w21, f21] += X[n, c, h + kh, 8*w0 + w21 + kw] * Wtp[c, kh, kw, f21]" in text
    assert "vectorize f21" in move.steps


def test_no_transposed_tile_when_the_row_fills_vectors():
    labels = [m.label for m in tile_moves(load_kernel("matmul"), WIDE)]
    assert labels and all(label.startswith("tile i2/") for label in labels)
    labels = [m.label for m in tile_moves(load_kernel("conv2d", {"W": 64}), WIDE)]
    assert not any(label.startswith("tile w2/") for label in labels)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_macro_keeps_the_outputs(name):
    program = load_kernel(name, SMALL[name])
    moves = macro_moves(program, target=WIDE)
    assert moves
    inputs = random_inputs(program, 3)
    want = interp.run(program, inputs)
    # every structure (a sample of the sizes: they only change split factors)
    seen, checked = set(), 0
    for move in moves:
        shape = re.sub(r"/\d+", "/", move.label)
        if shape in seen:
            continue
        seen.add(shape)
        got = interp.run(replay(program, move.steps), inputs)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=2e-4, atol=1e-4, err_msg=move.label)
        checked += 1
    assert checked >= 2
    if name == "conv2d":
        assert any(shape.startswith("tile w2/") for shape in seen)     # transposed ones too


TILE_COPY = """\
kernel t(N = 32)
in  A: f32[N, 32]
out B: f32[N, 32]

for i in 0..N:
  local acc: f32[32] in register
  for j in 0..32:
    acc[j] = A[i, j]
  for k in 0..32:
    acc[k] += 1
  for l in 0..32:
    B[i, l] = acc[l]
  for q in 0..2:
    B[i, q] += 1
"""


def test_vectorize_inner_skips_register_copies_and_short_loops():
    program = parse(TILE_COPY)
    assert vectorize_inner_steps(program) == ["vectorize k"]


def test_vectorize_inner_skips_strided_loops():
    """Naive matmul's k loop reads B[k, j] with a stride: a gather, left scalar."""
    assert vectorize_inner_steps(load_kernel("matmul")) == []
    program = replay(load_kernel("matmul"), ["fission j after s0"])
    assert vectorize_inner_steps(program) == ["vectorize j"]      # the unit-stride init


def test_distribute_expands_locals_to_free_a_contraction():
    """Attention's scores and P @ V become perfect nests (tile macros over queries x keys)
    once the row max and row sum have a slot per row; a kernel without a contraction in
    the loop keeps its locals (softmax: three passes over one row stay in one loop)."""
    program = load_kernel("attention", SMALL["attention"])
    steps = distribute_steps(program)
    assert "expand m at i" in steps and any(t.startswith("expand s at ") for t in steps)
    labels = {m.label for m in tile_moves(program, WIDE)}
    assert any(label.startswith("tile i4/") for label in labels)           # the scores
    assert not any(t.startswith("expand") for t in distribute_steps(load_kernel("softmax")))


def testlast_dim_layout():
    program = parse(TILE_COPY.replace("f32[32] in register", "f32[32, 2] in register")
                    .replace("acc[j] = A[i, j]", "acc[j, 0] = A[i, j]")
                    .replace("acc[k] += 1", "acc[k, 0] += 1")
                    .replace("B[i, l] = acc[l]", "B[i, l] = acc[l, 0]"))
    assert last_dim_layout(program, "acc", "k") == "layout acc 1 0"
    assert last_dim_layout(program, "acc", "i") is None         # no access of acc uses i
    assert last_dim_layout(program, "A", "j") is None           # already the last dimension


def test_one_thread_macros_do_not_parallelize():
    program = load_kernel("matmul", {"N": 64, "M": 64, "K": 64})
    single = macro_moves(program, target=WIDE, threads=1)
    assert single and not any(s.startswith("parallelize") for m in single for s in m.steps)
    labels = {m.label for m in single}
    extra = {m.label for m in macro_moves(program, target=WIDE, threads=2)} - labels
    assert "parallelize outer" in extra and all("parallelize" in label for label in extra)
    assert any(s.startswith("parallelize") for m in macro_moves(program, target=WIDE)
               if m.label.startswith("tile") for s in m.steps)


def test_row_kernels_get_vectorize_inner_after_a_prefetch_of_the_next_row():
    """Layernorm's three passes over a row restart the hardware stream at each row: a move
    per pass that can ask for the next row (the middle one is layernorm.steps), the rest
    of the move being vectorize inner (+ parallelize outer with threads); a GEMM, whose
    streams continue across rows, and a one-pass kernel get none."""
    program = load_kernel("layernorm", {"N": 8, "M": 64})
    moves = {m.label: m.steps for m in row_prefetch_moves(program, threads=2)}
    assert list(moves) == [f"vectorize inner + parallelize outer + prefetch X at {p} ahead i"
                           for p in "jkl"]
    at_k = moves["vectorize inner + parallelize outer + prefetch X at k ahead i"]
    assert at_k == ("prefetch X at k ahead i", "vectorize j", "vectorize k", "vectorize l",
                    "parallelize i")
    single = row_prefetch_moves(program, threads=1)
    assert [m.label for m in single][1] == "vectorize inner + prefetch X at k ahead i"
    assert not any(s.startswith("parallelize") for m in single for s in m.steps)
    assert row_prefetch_moves(load_kernel("matmul", {"N": 8, "M": 8, "K": 8})) == []
    assert row_prefetch_moves(load_kernel("relu")) == []
    assert "  for k in 0..M vector:\n    prefetch X[i + 1, k]\n" in print_program(
        replay(program, list(at_k)))


def test_tile_all_tiles_every_gemm_of_a_chain():
    from dojo_core import suite
    program = suite.load("k3mm", "f32", {"NI": 20, "NJ": 37, "NK": 24, "NL": 40, "NM": 18})
    chained = [m for m in tile_moves(program, WIDE, threads=1) if m.label.startswith("tile all")]
    assert chained and chained[0].label.count(";") == 2, [m.label for m in chained]
    state = replay(program, list(chained[0].steps))
    text = print_program(state)
    for buffer in ("acc", "acc2", "acc3"):
        assert f"local {buffer}: f32[" in text and "in register" in text
    inputs = suite.random_inputs("k3mm", program, 0)
    want, got = interp.run(program, inputs), interp.run(state, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-4, atol=2e-4)


def test_two_gemms_in_one_loop_are_cut_apart_and_each_tiled():
    """SwiGLU's two projections accumulate side by side in one loop: distribute cuts them
    into two perfect nests, and the chained tile holds each in registers."""
    from dojo_core import suite
    program = suite.load("swiglu", "f32", {"N": 12, "K": 16, "M": 40})
    steps = distribute_steps(program)
    state = replay(program, steps)
    nests = [text for text in print_program(state).split("\n") if "+= X[" in text]
    assert len(nests) == 2 and "fission j2 after s2" in steps, steps
    chained = [m for m in tile_moves(program, WIDE, threads=1) if m.label.startswith("tile all")]
    assert chained and chained[0].label.count(";") == 1, [m.label for m in chained]
    tiled = replay(program, list(chained[0].steps))
    text = print_program(tiled)
    assert "local acc: f32[" in text and "local acc2: f32[" in text
    inputs = suite.random_inputs("swiglu", program, 0)
    want, got = interp.run(program, inputs), interp.run(tiled, inputs)
    np.testing.assert_allclose(got["Y"], want["Y"], rtol=2e-4, atol=2e-4)


def test_a_temp_expanded_once_keeps_the_outer_loop_whole():
    """doitgen's `sum` needs one slot per q to cut q's body; the full distribution also cuts
    r (sum grows to [NR, NQ, NP]); expanded once, r stays whole and the "local" tiles run
    with sum at [NQ, NP]."""
    from dojo_core import suite
    program = suite.load("doitgen", "f64", {"NR": 3, "NQ": 10, "NP": 12})
    assert "expand sum at r" in distribute_steps(program)
    once = distribute_steps(program, expand_once=True)
    assert "expand sum at q" in once and "expand sum at r" not in once
    local = [m for m in tile_moves(program, WIDE, threads=1) if m.label.endswith(" local")]
    assert local, [m.label for m in tile_moves(program, WIDE, threads=1)]
    state = replay(program, list(local[0].steps))
    assert "temp  sum: f64[NQ, NP]" in print_program(state)
    inputs = suite.random_inputs("doitgen", program, 0)
    want, got = interp.run(program, inputs), interp.run(state, inputs)
    np.testing.assert_allclose(got["A"], want["A"], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("target,rows", [("x86-avx512", 8), ("x86-avx2", 4)])
def test_dot_tiles_of_a_triangular_row_reduction(target, rows):
    from dojo_core import suite
    from dojo_core.codegen import get_target
    program = suite.load("syrk", "f32", {"M": 40, "N": 30})
    dots = [m for m in tile_moves(program, target, threads=1) if m.label.startswith("dot")]
    lanes = get_target(target).lanes(4)
    assert dots and dots[0].label == f"dot j2/{rows} x k/{lanes}", [m.label for m in dots]
    state = replay(program, list(dots[0].steps))
    text = print_program(state)
    assert f"in 0..{rows} unroll:" in text
    assert f"in 0..{lanes} vector:" in text and "rfactor" in " ".join(dots[0].steps)
    inputs = suite.random_inputs("syrk", program, 0)
    want, got = interp.run(program, inputs), interp.run(state, inputs)
    np.testing.assert_allclose(got["C"], want["C"], rtol=2e-4, atol=2e-4)


def test_no_dot_tile_where_the_reduction_is_strided():
    program = load_kernel("matmul", {"N": 32, "M": 64, "K": 48})       # B[k, j]: k strided
    assert not [m for m in tile_moves(program, WIDE) if m.label.startswith("dot")]


def test_the_zeroing_nest_is_fused_into_every_size_of_a_tile():
    """doitgen's `sum[p] = 0`, cut from its reduction by the distribution, is split like the
    tile and fused into its loops at every size the tile is resized to (its splits follow
    the tile's): the register tile starts at zero, no pass stores zeros into `sum`, and the
    outputs stay."""
    from dojo_core import suite
    program = suite.load("doitgen", "f32", {"NR": 2, "NQ": 16, "NP": 40})
    moves = [m for m in tile_moves(program, WIDE, threads=1) if m.label.endswith(" local")]
    assert len({re.sub(r" x .*", "", m.label) for m in moves}) >= 2     # several sizes
    inputs = suite.random_inputs("doitgen", program, 0)
    want = interp.run(program, inputs)
    for move in moves:
        text = print_program(replay(program, list(move.steps)))
        assert re.search(r"acc\w*\[\w+, \w+\] = 0", text), move.label
        assert not re.search(r"\bsum\[[^]]*\] = 0", text), move.label
        got = interp.run(replay(program, list(move.steps)), inputs)
        np.testing.assert_allclose(got["A"], want["A"], rtol=2e-4, atol=1e-4, err_msg=move.label)


def test_an_initialiser_that_is_not_a_literal_stays_apart():
    """gemm's `C[i, j] *= beta` reads C: it is no literal start, so it is not fused and
    the tile loads C."""
    from dojo_core import suite
    program = suite.load("gemm", "f32", {"NI": 32, "NJ": 64, "NK": 16})
    move = tile_moves(program, WIDE, threads=1)[0]
    text = print_program(replay(program, list(move.steps)))
    assert "*= beta" in text and re.search(r"acc\w*\[\w+, \w+\] = C\[", text), text

"""The cache-blocking macro (dojo_core/agents/blocking.py): a transpose's two innermost loops
get B x B blocks, B from L1 and the element sizes; other nests get no block move."""
from __future__ import annotations

import numpy as np

from dojo_core import harness, interp, ir, suite
from dojo_core.agents.blocking import block_sizes, cache_block_moves
from dojo_core.agents.macros import macro_moves
from dojo_core.kernels import load_kernel
from dojo_core.parser import parse
from dojo_core.walks import replay

from kernels_text import kernel_text


def transpose(dtype="f64", sizes=None):
    return suite.load("batched_transpose", dtype, sizes or {"B": 2, "N": 64, "M": 48})


def inner(program):
    return next(loop for loop in ir.loops(program) if loop.iterator == "j")


def test_the_block_is_the_largest_whose_arrays_fit_half_of_l1():
    f64, f32 = transpose("f64"), transpose("f32")
    assert block_sizes(f64, inner(f64), 32768) == [32, 16]     # 2 arrays x 8 B x 32 x 32 = 16 KiB
    assert block_sizes(f64, inner(f64), 65536) == [32, 16]
    assert block_sizes(f32, inner(f32), 65536) == [64, 32]     # half the bytes: twice the side
    assert block_sizes(f64, inner(f64), 1024) == [4]           # no half block below 4
    assert block_sizes(f64, inner(f64), 256) == []


def test_a_transpose_gets_blocks_that_keep_its_outputs():
    program = transpose()
    moves = cache_block_moves(program, "x86-avx2")
    assert moves and all(m.label.startswith("cache block i j by ") for m in moves)
    steps = moves[-1].steps
    assert steps[0].startswith("split i by ") and steps[1].startswith("split j by ")
    assert steps[2].startswith("interchange i")
    assert any(m.label == moves[-1].label for m in macro_moves(program, target="x86-avx2",
                                                               threads=1))
    state = replay(program, list(steps))
    inputs = suite.random_inputs("batched_transpose", program, 0)
    np.testing.assert_array_equal(interp.run(state, inputs)["Y"], interp.run(program, inputs)["Y"])
    assert harness.verify(state, program, inputs, reference="interp")["verified"]


def test_no_block_for_a_reduction_or_a_nest_that_one_order_serves():
    assert cache_block_moves(load_kernel("matmul", {"M": 64, "N": 64, "K": 64}), "x86-avx2") == []
    copy = kernel_text("copy(N = 64, M = 64)", "in X: f64[N, M]; out Y: f64[N, M]", """\
for i in 0..N:
  for j in 0..M:
    Y[i, j] = X[i, j]
""")
    assert cache_block_moves(parse(copy), "x86-avx2") == []


def test_no_block_larger_than_half_the_loops():
    assert cache_block_moves(transpose(sizes={"B": 2, "N": 20, "M": 20}), "x86-avx2") == []

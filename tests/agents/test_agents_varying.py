"""The varying-extent macro (dojo_core/agents/varying.py): triangular loops get vector-wide
blocks (split, partition, rfactor, vectorize) sized from the target, outputs unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import harness, interp, suite
from dojo_core.agents.macros import macro_moves
from dojo_core.agents.varying import varying_extent_moves
from dojo_core.codegen.targets import get_target
from dojo_core.printer import print_program
from dojo_core.walks import replay


@pytest.mark.parametrize("name,sizes,outputs", [
    ("trisolv", {"N": 37}, ("x",)),
    ("cholesky", {"N": 29}, ("A",)),
    ("durbin", {"N": 33}, ("y",)),
])
def test_varying_move_vectorizes_the_triangular_loops_and_keeps_outputs(name, sizes, outputs):
    program = suite.load(name, "f64", sizes)
    moves = varying_extent_moves(program, "x86-avx2")
    assert [m.label for m in moves] == ["vectorize varying x1", "vectorize varying x2"]
    state = replay(program, list(moves[0].steps))
    assert " vector:" in print_program(state)
    inputs = suite.random_inputs(name, program, 0)
    want, got = interp.run(program, inputs), interp.run(state, inputs)
    for out in outputs:
        np.testing.assert_allclose(got[out], want[out], rtol=1e-9, atol=1e-9)
    result = harness.verify(state, program, inputs, reference="interp")
    assert result["verified"], result


@pytest.mark.parametrize("target,block", [("x86-avx2", 4), ("x86-avx512", 8), ("riscv-rvv", None)])
def test_the_block_is_one_vector_of_the_dtype_on_the_target(target, block):
    program = suite.load("trisolv", "f64", {"N": 37})
    lanes = get_target(target).lanes(8)
    assert block is None or lanes == block
    first = varying_extent_moves(program, target)[0].steps
    assert first[:4] == ("split j by %d" % lanes, "partition j0", "rfactor j1 as xr",
                         "vectorize j1")
    f32 = suite.load("trisolv", "f32", {"N": 37})
    assert varying_extent_moves(f32, target)[0].steps[0] == "split j by %d" % (2 * lanes)


def test_the_reduction_is_split_into_lane_partials():
    program = suite.load("trisolv", "f64", {"N": 37})
    text = print_program(replay(program, list(varying_extent_moves(program, "x86-avx2")[0].steps)))
    assert "xr[j1] += -L[i, 4*j0 + j1] * x[4*j0 + j1]" in text
    assert "x[i] += xr[j1r]" in text


def test_no_move_where_every_inner_loop_has_a_constant_extent():
    program = suite.load("gemm", "f64", {"NI": 8, "NJ": 9, "NK": 10})
    assert varying_extent_moves(program, "x86-avx2") == []


def test_the_macro_is_offered_among_the_agents_moves():
    program = suite.load("trisolv", "f64", {"N": 37})
    labels = [m.label for m in macro_moves(program, target="x86-avx2", threads=1)]
    assert "vectorize varying x1" in labels


def test_after_the_unit_stride_move_the_upper_triangle_vectorizes():
    # ludcmp's U rows: w2 expanded over j2 in i..N (slots j2 - i), j2 interchanged inside
    # k2, then the varying-extent blocks vectorize it
    from dojo_core.agents.strides import unit_stride_moves
    program = suite.load("ludcmp", "f64", {"N": 21})
    first = unit_stride_moves(program)[0].steps
    assert first[0] == "expand w2 at j2" and any(s.startswith("interchange") for s in first)
    state = replay(program, list(first))
    then = varying_extent_moves(state, "x86-avx2")[0].steps
    final = replay(state, list(then))
    text = print_program(final)
    assert "local w2: f64[21]" in text
    assert ("    for j50 in 0..(N - i) // 4:\n      for j51 in 0..4 vector:\n"
            "        w2[4*j50 + j51] += -A[i, k2] * A[k2, i + 4*j50 + j51]") in text
    inputs = suite.random_inputs("ludcmp", program, 0)
    want, got = interp.run(program, inputs), interp.run(final, inputs)
    np.testing.assert_allclose(got["x"], want["x"], rtol=1e-9, atol=1e-9)
    assert harness.verify(final, program, inputs, reference="interp")["verified"]


def test_a_strided_reduction_gets_independent_partial_chains_not_lanes():
    # nussinov's k loop reads table[k + 1, j], N apart: no lanes, but F partial maxima
    # (starting from the least i32) unrolled, and the table unchanged
    program = suite.load("nussinov", "i32", {"N": 37})
    moves = varying_extent_moves(program, "x86-avx2")
    assert [m.label for m in moves] == ["vectorize varying x1 + strided chains",
                                        "vectorize varying x2 + strided chains"]
    assert moves[0].steps[:4] == ("split k by 8", "partition k0", "rfactor k1 as tabler",
                                  "unroll k1")
    state = replay(program, list(moves[0].steps))
    text = print_program(state)
    assert "tabler[k1i] = -2147483648" in text and "for k1 in 0..8 unroll:" in text
    inputs = suite.random_inputs("nussinov", program, 0)
    np.testing.assert_array_equal(interp.run(state, inputs)["table"],
                                  interp.run(program, inputs)["table"])
    result = harness.verify(state, program, inputs, reference="interp")
    assert result["verified"], result

"""The time-tile macro (dojo_core/agents/timetiles.py): a stencil's time loop is tiled with
the least legal skew, the tile sized from a cache budget and the program's footprint, the
innermost loop left whole and vectorized; outputs unchanged."""
from __future__ import annotations

import numpy as np

from dojo_core import harness, interp, suite
from dojo_core.agents.macros import macro_moves
from dojo_core.agents.timetiles import least_skew, time_tile_moves, time_tile_shape
from dojo_core.kernels import load_kernel
from dojo_core.transforms.timetile import time_loops
from dojo_core.walks import replay

ROW_BYTES = 2 * 8 * 600          # jacobi_2d at N = 600: a row of A and of B, f64


def jacobi_2d(n=600, steps=20):
    return suite.load("jacobi_2d", "f64", {"TSTEPS": steps, "N": n})


def test_the_tile_is_the_widest_whose_live_rows_fit_the_budget():
    program = jacobi_2d()
    loop = time_loops(program)[0]
    for rows in (30, 60, 120):
        steps, widths, skew = time_tile_shape(program, loop, rows * ROW_BYTES,
                                              least_skew(program, loop))
        assert skew == 2                               # two sweeps: skew 1 is not legal
        assert widths == (rows - 2 * skew - 2,)        # live rows: width, lean at both edges, halo
        assert skew * steps <= widths[0] < skew * 2 * steps or steps == 16


def test_rows_too_large_for_the_budget_tile_two_levels_only_above_the_innermost():
    three_d = suite.load("heat_3d", "f64", {"TSTEPS": 20, "N": 60})
    loop = time_loops(three_d)[0]
    plane = 2 * 8 * 60 * 60
    steps, widths, skew = time_tile_shape(three_d, loop, plane * 3, 2)   # 3 planes: no 1-level tile
    assert len(widths) == 2
    assert least_skew(three_d, loop) == 2
    assert time_tile_shape(jacobi_2d(), time_loops(jacobi_2d())[0], ROW_BYTES * 5, 2) is None


def test_nothing_to_tile_when_the_data_fits_whole():
    small = suite.load("jacobi_1d", "f64", {"TSTEPS": 20, "N": 400})
    assert time_tile_moves(small, "x86-avx2") == []


def test_no_time_loop_no_move():
    assert time_tile_moves(load_kernel("matmul", {"M": 64, "N": 64, "K": 64}), "x86-avx2") == []


def test_the_move_vectorizes_the_inner_loops_and_keeps_outputs():
    program = jacobi_2d(n=300, steps=6)
    moves = time_tile_moves(program, "x86-avx2")
    assert moves, "a 300 x 300 pair of f64 grids (1.4 MB) exceeds half of any L2"
    move = moves[0]
    assert move.steps[0].startswith("timetile t by ") and move.steps[0].endswith(" skew 2")
    assert "vectorize j" in move.steps and "vectorize j2" in move.steps
    assert any(m.label == move.label for m in macro_moves(program, target="x86-avx2", threads=1))
    state = replay(program, list(move.steps))
    inputs = suite.random_inputs("jacobi_2d", program, 0)
    want, got = interp.run(program, inputs), interp.run(state, inputs)
    for out in ("A", "B"):
        np.testing.assert_array_equal(got[out], want[out])
    assert harness.verify(state, program, inputs, reference="interp")["verified"]


def test_an_already_time_tiled_nest_gets_no_second_tile():
    program = jacobi_2d(n=300, steps=6)
    tiled = replay(program, list(time_tile_moves(program, "x86-avx2")[0].steps))
    assert time_loops(tiled)                       # its tile loops index no array either
    assert time_tile_moves(tiled, "x86-avx2") == []

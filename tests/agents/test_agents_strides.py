"""The unit-stride macro (dojo_core/agents/strides.py): nests that run down columns get the
contiguous loop innermost and vectorized, with the kernel's outputs unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import interp, suite
from dojo_core.agents.macros import macro_moves
from dojo_core.agents.strides import unit_stride_moves
from dojo_core.kernels import load_kernel
from dojo_core.printer import print_program
from dojo_core.walks import replay


@pytest.mark.parametrize("name,sizes,outputs", [
    ("softmax_cols", {"N": 7, "M": 12}, ("Y",)),
    ("trmm", {"M": 9, "N": 11}, ("B",)),
    ("symm", {"M": 8, "N": 10}, ("C",)),
    ("covariance", {"M": 9, "N": 7}, ("cov",)),
])
def test_unit_stride_move_vectorizes_the_contiguous_loop_and_keeps_outputs(name, sizes, outputs):
    program = suite.load(name, "f64", sizes)
    moves = unit_stride_moves(program)
    assert moves, f"no unit-stride move for {name}"
    state = replay(program, list(moves[0].steps))
    assert any(step.startswith("interchange") for step in moves[0].steps)
    assert " vector:" in print_program(state)
    inputs = suite.random_inputs(name, program, 0)
    want, got = interp.run(program, inputs), interp.run(state, inputs)
    for out in outputs:
        np.testing.assert_allclose(got[out], want[out], rtol=1e-9, atol=1e-9)


def test_column_softmax_passes_run_along_rows():
    program = suite.load("softmax_cols", "f64", {"N": 7, "M": 12})
    steps = unit_stride_moves(program)[0].steps
    assert "expand mx at j" in steps and "expand den at j" in steps
    text = print_program(replay(program, list(steps)))
    # every pass over X or Y walks j innermost: i outside, j vector inside
    assert text.count("vector:") >= 3 and "for i in 0..N:" in text


def test_no_move_where_every_nest_is_already_contiguous():
    assert unit_stride_moves(load_kernel("softmax", {"N": 8, "M": 16})) == []


def test_the_macro_is_offered_by_macro_moves():
    program = suite.load("softmax_cols", "f64", {"N": 7, "M": 12})
    labels = [m.label for m in macro_moves(program, target="x86-avx2", threads=1)]
    assert "unit stride j" in labels


def test_private_buffers_are_laid_out_so_the_independent_loop_runs_unit_stride():
    """PolyBench adi sweeps along j for every i, through temps p[i, j] and q[i, j]: laid
    out as [j, i], every access of the sweep is unit-stride in i, which goes innermost and
    vectorizes; the interface array u keeps its layout, and each temp is laid out once
    (the two sweeps want opposite layouts of p and q)."""
    program = suite.load("adi", "f64", {"TSTEPS": 3, "N": 12})
    moves = unit_stride_moves(program)
    assert len(moves) == 1
    steps = moves[0].steps
    layouts = [s for s in steps if s.startswith("layout")]
    assert layouts == ["layout p 1 0", "layout q 1 0", "layout v 1 0"]
    text = print_program(replay(program, list(steps)))
    assert ("  for j in 1..N - 1:\n    for i5 in 1..N - 1 vector:\n"
            "      p[j, i5] = -c / (a * p[j - 1, i5] + b)\n") in text
    inputs = suite.random_inputs("adi", program, 0)
    want, got = interp.run(program, inputs), interp.run(replay(program, list(steps)), inputs)
    np.testing.assert_allclose(got["u"], want["u"], rtol=1e-12, atol=1e-12)

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

"""The wavefront macro (dojo_core/agents/wavefronts.py): a Gauss-Seidel sweep's rows, chains
of dependent points, are skewed by the least factor whose wavefronts hold independent
points; reductions, parallel loops and interchangeable pairs get no such move; outputs
unchanged, interpreted and compiled."""
from __future__ import annotations

import numpy as np

from dojo_core import harness, interp, suite
from dojo_core.agents.macros import macro_moves
from dojo_core.agents.wavefronts import independent_factor, wavefront_moves
from dojo_core.kernels import load_kernel
from dojo_core.parser import parse
from dojo_core.walks import replay


def seidel_2d(n=12, steps=3):
    return suite.load("seidel_2d", "f64", {"TSTEPS": steps, "N": n})


def test_a_gauss_seidel_sweep_gets_the_least_factor_with_independent_points():
    program = seidel_2d()
    # factor 1 is legal, but a point then needs its upper-right neighbour of the same wavefront
    assert independent_factor(program, "i", "j") == 2
    moves = wavefront_moves(program)
    assert [m.steps for m in moves] == [("wavefront i j by 2",)]    # the strided i stays scalar
    assert any(m.label == "wavefront i j by 2" for m in macro_moves(program, threads=1))


def test_the_move_keeps_outputs_interpreted_and_compiled():
    program = seidel_2d(n=14, steps=4)
    state = replay(program, list(wavefront_moves(program)[0].steps))
    inputs = suite.random_inputs("seidel_2d", program, 2)
    want = interp.run(program, inputs)
    np.testing.assert_array_equal(interp.run(state, inputs)["A"], want["A"])
    assert harness.verify(state, program, inputs, reference="interp")["verified"]


def test_no_move_for_reductions_parallel_loops_or_interchangeable_pairs():
    assert wavefront_moves(load_kernel("matmul", {"M": 16, "N": 16, "K": 16})) == []
    assert wavefront_moves(suite.load("jacobi_2d", "f64", {"TSTEPS": 3, "N": 12})) == []
    recurrence = parse("""\
kernel rows(N = 8, M = 10)
inout A: f64[N, M]

for i in 0..N:
  for j in 1..M:
    A[i, j] = A[i, j - 1] * 0.5 + A[i, j]
""")
    assert wavefront_moves(recurrence) == []    # interchange i j makes i an independent inner loop

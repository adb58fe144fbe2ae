"""The library's best-known schedules (`NAME.steps`, DESIGN.md section 9) replay legally at
the kernel's default sizes, pass the checker, and compute the same outputs as the
untransformed kernel (on the interpreter, at the smallest scaled sizes where every step
still applies)."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import interp
from dojo_core.checker import check
from dojo_core.kernels import list_kernels, load_kernel, random_inputs, steps_path
from dojo_core.steps import read_steps
from dojo_core.transforms import NotApplicable
from dojo_core.walks import replay

WITH_STEPS = [n for n in list_kernels() if steps_path(n) is not None]


def _texts(name):
    return [text for _, text in read_steps(steps_path(name))]


def test_matmul_has_a_schedule():
    assert "matmul" in WITH_STEPS


@pytest.mark.parametrize("name", WITH_STEPS)
def test_steps_replay_at_default_sizes(name):
    program = replay(load_kernel(name), _texts(name))
    assert check(program) == []
    assert replay(load_kernel(name), _texts(name)) == program   # deterministic


@pytest.mark.parametrize("name", WITH_STEPS)
def test_steps_keep_outputs_at_scaled_sizes(name):
    default = load_kernel(name)
    for divisor in (8, 4, 2):
        small = default.with_sizes({k: max(1, v // divisor) for k, v in default.sizes})
        try:
            scheduled = replay(small, _texts(name))
        except NotApplicable:
            continue
        inputs = random_inputs(small, 1)
        want, got = interp.run(small, inputs), interp.run(scheduled, inputs)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=2e-4, atol=1e-4)
        return
    pytest.fail(f"{name}.steps applies at none of the scaled sizes")


def test_matmul_schedule_has_the_structure_of_an_optimized_gemm():
    from dojo_core.printer import print_program
    text = print_program(replay(load_kernel("matmul"), _texts("matmul")))
    assert "parallel" in text                           # a parallel outer loop
    assert "local Bt: f32[128, 32]" in text             # a packed panel of B
    assert "local acc: f32[8, 32] in register" in text  # a register tile
    assert " vector:" in text and " unroll:" in text    # a vectorized, unrolled micro-kernel

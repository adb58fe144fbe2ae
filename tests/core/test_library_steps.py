"""The library's best-known schedules (`NAME.steps`, DESIGN.md section 9) replay legally at
the kernel's default sizes, pass the checker, and compute the same outputs as the
untransformed kernel (on the interpreter, at the smallest uniformly scaled sizes where every
step still applies, else with the sizes scaled one at a time)."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import interp
from dojo_core.checker import check
from dojo_core.kernels import list_kernels, load_kernel, random_inputs, steps_files, steps_path
from dojo_core.steps import read_steps
from dojo_core.tolerance import relative_tolerance
from dojo_core.walks import replay

from transform_checks import scaled

WITH_STEPS = [n for n in list_kernels() if steps_path(n) is not None]
# every schedule file, NAME.steps and the target-specific NAME.TARGET.steps, as "NAME.stem"
SCHEDULES = [f"{n}:{p.name}" for n in list_kernels() for p in steps_files(n)]


def _texts(name):
    """The step texts of a kernel's NAME.steps, or of "NAME:FILE" (one of its schedules)."""
    kernel, _, filename = name.partition(":")
    path = steps_path(kernel) if not filename else steps_path(kernel).with_name(filename)
    return [text for _, text in read_steps(path)]


def test_target_specific_schedules_are_found():
    avx2 = steps_path("matmul", "x86-avx2")
    assert avx2 is not None and avx2.name == "matmul.x86-avx2.steps"
    assert steps_path("matmul", "riscv-rvv").name == "matmul.steps"     # falls back
    assert steps_path("relu", "x86-avx2") is None
    assert any(s.endswith(".x86-avx2.steps") for s in SCHEDULES)


def test_matmul_has_a_schedule():
    assert "matmul" in WITH_STEPS


@pytest.mark.parametrize("name", SCHEDULES)
def test_steps_replay_at_default_sizes(name):
    kernel = name.partition(":")[0]
    program = replay(load_kernel(kernel), _texts(name))
    assert check(program) == []
    assert replay(load_kernel(kernel), _texts(name)) == program   # deterministic


def _scaled(name):
    """(small program, scheduled program) at sizes the steps apply at (``scaled``)."""
    found = scaled(load_kernel(name.partition(":")[0]), _texts(name))
    if found is None:
        pytest.fail(f"{name}.steps applies at none of the scaled sizes")
    return found


@pytest.mark.parametrize("name", SCHEDULES)
def test_steps_keep_outputs_at_scaled_sizes(name):
    small, scheduled = _scaled(name)
    inputs = random_inputs(small, 1)
    want, got = interp.run(small, inputs), interp.run(scheduled, inputs)
    dtypes = {a.name: a.dtype for a in small.arrays}
    for k in want:   # a long reduction may be reassociated by its schedule (tolerance.py)
        rtol = relative_tolerance([small, scheduled], k, 2e-4, dtypes[k])
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=1e-4)


def test_matmul_schedule_has_the_structure_of_an_optimized_gemm():
    from dojo_core.printer import print_program
    text = print_program(replay(load_kernel("matmul"), _texts("matmul")))
    assert "parallel" in text                           # a parallel outer loop
    assert "local Bt: f32[K, 64]" in text               # a packed panel of B
    assert "local acc: f32[6, 64] in register" in text  # a register tile
    assert " vector:" in text and " unroll:" in text    # a vectorized, unrolled micro-kernel


@pytest.mark.parametrize("kernel, out", [("matmul", "C"), ("bmm", "Z")])
def test_avx2_gemm_schedules_write_each_output_tile_once_from_registers(kernel, out):
    """The AVX2 GEMMs fuse the zeroing into their register tiles: the output is never read
    (no zeroing pass to reload, no reload per k block) and is written by the store of the
    full tiles and the store of the row tail's tile, from the register accumulators."""
    from dojo_core import ir
    program = replay(load_kernel(kernel), _texts(f"{kernel}:{kernel}.x86-avx2.steps"))
    assert not [a for s in ir.assignments(program) for a in ir.reads(s) if a.array == out]
    writes = [s for s in ir.assignments(program) if s.target.array == out]
    assert [(s.op, s.value.array) for s in writes] == [("=", "acc"), ("=", "acct")]
    tiles = [s for s in ir.walk_stmts(program.body)
             if isinstance(s, ir.Local) and s.name in ("acc", "acct")]
    assert [(d.name, d.space) for d in tiles] == [("acc", "register"), ("acct", "register")]


@pytest.mark.parametrize("name", SCHEDULES)
def test_steps_compiled_c_keeps_outputs_at_scaled_sizes(name):
    """Every schedule, compiled for this machine (gcc, the host target), computes what the
    untransformed kernel computes on the interpreter (harness tolerance per dtype)."""
    from dojo_core import harness
    small, scheduled = _scaled(name)
    inputs = random_inputs(small, 2)
    check = harness.verify(scheduled, small, inputs, reference="interp")
    assert check["verified"], check["errors"]

"""The reassociation tolerance (dojo_core/tolerance.py): the roundoff units each output may
carry, from the program's reductions and its data flow, and the tolerance they give."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import load, replay
from dojo_core.harness import TOLERANCE, compare
from dojo_core.kernels import load_kernel, random_inputs
from dojo_core.interp import run
from dojo_core.tolerance import UNIT_ROUNDOFF, error_units, relative_tolerance

from kernels_text import kernel_text, row_normalize_body

LOCAL_ROWS = kernel_text("rows(N = 8, M = 5000)", "in X: f32[N, M]; out Y: f32[N, M]",
                         row_normalize_body("X", "Y"))

TRIANGLE = kernel_text("tri(N = 3000)", "in A: f64[N, N]; out y: f64[N]", """\
for i in 0..N:
  y[i] = 0
  for j in 0..i + 1:
    y[i] += A[i, j]
""")

MAXES = kernel_text("m(N = 100000)", "in x: f32[N]; out s: f32", """\
s = -1e30
for i in 0..N:
  s max= x[i]
""")


def test_a_reduction_carries_one_unit_per_extra_term():
    assert error_units(load_kernel("matmul"))["C"] == 511                  # K - 1
    assert error_units(load_kernel("sum_squares"))["s"] == 16777216 - 1


def test_a_local_reduces_only_inside_its_scope_and_its_readers_inherit():
    units = error_units(load(LOCAL_ROWS, "rows.dojo"))
    assert units["s"] == 4999 and units["Y"] == 4999                       # not N * M


def test_triangular_bounds_take_their_largest_extent():
    assert error_units(load(TRIANGLE, "tri.dojo"))["y"] == 2999


def test_max_and_min_are_exact_in_any_order():
    assert error_units(load(MAXES, "m.dojo")).get("s", 0) == 0


def test_the_tolerance_widens_only_past_the_dtype_tolerance_and_only_for_floats():
    program = load_kernel("sum_squares")
    rtol = TOLERANCE["f32"][0]
    assert relative_tolerance([program], "s", rtol, "f32") == pytest.approx(16777215 * UNIT_ROUNDOFF["f32"])
    assert relative_tolerance([program, program], "s", rtol, "f32") == pytest.approx(2 * 16777215 * UNIT_ROUNDOFF["f32"])
    assert relative_tolerance([program], "s", 0, "i32") == 0
    assert relative_tolerance([load_kernel("matmul")], "C", rtol, "f32") == rtol   # 511 u < 1e-4


def test_a_reassociated_long_sum_passes_and_a_wrong_one_still_fails():
    """rfactor's partial sums of 2^21 squares differ from the sequential f32 sum by about
    1e-3 (the sequential one drifts), beyond the dtype's 1e-4: the two programs' bounds
    (2^21 u + 4606 u) admit it. Against a float64 reference (a library's quality gate) the
    dtype's tolerance holds unwidened: the schedule passes it, a result 1e-3 off does not;
    and one 1 % off is refused against the sequential kernel at 2^16 terms (bound 2 x 2^16 u,
    7.8e-3)."""
    root = load_kernel("sum_squares").with_sizes({"N": 1 << 21})
    scheduled = replay(root, ["split i by 4096", "rfactor i1 as P", "vectorize i1"])
    inputs = random_inputs(root, 1)
    want, got = run(root, inputs), run(scheduled, inputs)
    assert abs(float(got["s"]) - float(want["s"])) > 5 * TOLERANCE["f32"][0] * abs(float(want["s"]))
    assert compare(got, want, scheduled, root)["s"] <= 1.0
    exact = {"s": np.float64(np.sum(inputs["x"].astype(np.float64) ** 2))}
    assert compare(got, exact, scheduled)["s"] <= 1.0
    assert compare({"s": np.float32(float(exact["s"]) * 1.001)}, exact, scheduled)["s"] > 1.0
    shorter = load_kernel("sum_squares").with_sizes({"N": 1 << 16})
    want = run(shorter, random_inputs(shorter, 1))
    assert compare({"s": np.float32(float(want["s"]) * 1.01)}, want, shorter, shorter)["s"] > 1.0
    assert compare({"s": np.float32(float(want["s"]) * 1.001)}, want, shorter, shorter)["s"] <= 1.0

"""Property: random sequences of legal actions never change what a library kernel computes.

Every library kernel, at its test sizes, takes seeded random walks of 8 legal actions;
after each walk the program must pass the checker, replay to the identical program from
its step texts, and give the same outputs as the untransformed kernel on the interpreter.
(Compiled C joins this comparison when the C backend lands.) WALKS_PER_KERNEL walks run in
`make test`; `python bench/random_walks.py --walks 10` runs more.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dojo_core import interp
from dojo_core.checker import check
from dojo_core.kernels import info, list_kernels, load_kernel, random_inputs
from dojo_core.printer import print_program
from dojo_core.walks import random_walk, replay

try:
    from strategies import programs
except ImportError:   # run from the repository root as a package
    from tests.strategies import programs

WALKS_PER_KERNEL = int(os.environ.get("DOJO_WALKS_PER_KERNEL", "3"))
STEPS = 8


def _tolerance(program):
    dtypes = {d.dtype for d in program.arrays}
    return (1e-2, 1e-2) if dtypes & {"f16", "bf16"} else (2e-4, 2e-5)


def assert_same_outputs(original, transformed, seed=0, context=""):
    inputs = random_inputs(original, seed)
    want = interp.run(original, inputs)
    got = interp.run(transformed, inputs)
    rtol, atol = _tolerance(original)
    for name, expected in want.items():
        np.testing.assert_allclose(got[name], expected, rtol=rtol, atol=atol,
                                   err_msg=f"output {name} differs {context}")


def walk_and_compare(name, seed):
    original = load_kernel(name, info(name).test_sizes)
    texts, final = random_walk(original, STEPS, seed)
    context = f"after steps {texts} on {name} (seed {seed})\n{print_program(final)}"
    assert check(final) == [], context
    assert replay(original, texts) == final, context
    assert_same_outputs(original, final, seed, context)
    return texts


@pytest.mark.parametrize("name", list_kernels())
def test_seeded_random_walks_keep_outputs(name):
    for seed in range(WALKS_PER_KERNEL):
        walk_and_compare(name, seed)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(list_kernels()), st.integers(0, 10**6))
def test_hypothesis_random_walks_keep_outputs(name, seed):
    walk_and_compare(name, seed)


@settings(max_examples=int(os.environ.get("DOJO_GENERATED_WALKS", "25")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(programs(max_depth=3, annotate=False), st.integers(0, 10**6))
def test_random_walks_on_generated_programs(program, seed):
    """Kernels nobody wrote by hand (tests/strategies.py) get the same guarantee."""
    texts, final = random_walk(program, STEPS, seed)
    context = f"after steps {texts}\n{print_program(program)}\n=>\n{print_program(final)}"
    assert check(final) == [], context
    assert replay(program, texts) == final, context
    inputs = random_inputs(program, seed)
    want, got = interp.run(program, inputs), interp.run(final, inputs)
    rtol, atol = _tolerance(program)
    for name, expected in want.items():
        finite = np.abs(expected[np.isfinite(expected)]) if expected.dtype.kind == "f" else np.abs(expected)
        scale = max(1.0, float(finite.max()) if finite.size else 1.0)
        np.testing.assert_allclose(got[name], expected, rtol=rtol, atol=atol * scale,
                                   err_msg=context, equal_nan=True)

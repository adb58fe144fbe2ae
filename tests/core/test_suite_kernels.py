"""The benchmark suite (dojo_core/suite): every kernel checks at its datasets and dtypes,
the interpreter agrees with its independent numpy reference, compiled C agrees with the
interpreter, and seeded random walks keep its outputs (sampled: SUITE_WALK_SAMPLE kernels
per run, rotated by DOJO_SUITE_SEED, so every kernel is walked across CI runs)."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest

from dojo_core import interp
from dojo_core.checker import check
from dojo_core.harness import TOLERANCE, compare, run_c
from dojo_core.printer import print_program
from dojo_core.suite import SUITE_DIR, info, list_suite, load, random_inputs, reference
from dojo_core.walks import random_walk, replay

CASES = [(name, dtype) for name in list_suite() for dtype in info(name).dtypes]
SEED = int(os.environ.get("DOJO_SUITE_SEED", "0"))
SUITE_WALK_SAMPLE = int(os.environ.get("DOJO_SUITE_WALKS", "8"))
WALKED = sorted(random.Random(SEED).sample(CASES, min(SUITE_WALK_SAMPLE, len(CASES))))


def assert_matches(outputs, expected, program, context):
    errors = compare(outputs, expected, program)
    bad = {k: v for k, v in errors.items() if not v <= 1}
    assert not bad, f"{context}: error / allowed {bad}"


def test_every_file_has_an_entry_and_every_entry_a_file():
    files = sorted(p.stem for p in SUITE_DIR.glob("*.dojo"))
    assert files == list_suite()


def test_suite_is_distinct_from_the_library():
    from dojo_core.kernels import list_kernels
    assert not set(list_suite()) & set(list_kernels())
    assert not list(SUITE_DIR.glob("*.steps"))


@pytest.mark.parametrize("name,dtype", CASES)
def test_kernel_checks_at_every_dataset(name, dtype):
    entry = info(name)
    assert set(entry.sizes) >= {"MEDIUM", "LARGE"}
    default = load(name, dtype)
    assert default.name == name
    assert default.size_values == dict(entry.sizes["MEDIUM"]), "header defaults are MEDIUM"
    for dataset in ("MEDIUM", "LARGE", "test"):
        program = load(name, dtype, dataset)
        assert check(program) == [], f"{name} {dtype} {dataset}"
    assert max(entry.test_sizes.values()) <= 24
    floats = {d.dtype for d in default.arrays} - {"i32", "i64"}
    assert floats <= {dtype}


@pytest.mark.parametrize("name,dtype", CASES)
def test_interpreter_matches_numpy_reference(name, dtype):
    program = load(name, dtype, "test")
    for seed in (0, 1):
        inputs = random_inputs(name, program, seed)
        kept = {k: v.copy() for k, v in inputs.items()}
        got = interp.run(program, inputs)
        assert_matches(got, reference(name, inputs, program), program, f"{name} {dtype}")
        for k, v in kept.items():
            np.testing.assert_array_equal(inputs[k], v)


@pytest.mark.parametrize("name,dtype", CASES)
def test_compiled_c_matches_interpreter(name, dtype):
    program = load(name, dtype, "test")
    inputs = random_inputs(name, program, 2)
    assert_matches(run_c(program, inputs), interp.run(program, inputs), program,
                   f"{name} {dtype} compiled")


@pytest.mark.parametrize("name,dtype", WALKED)
def test_random_walks_keep_outputs(name, dtype):
    original = load(name, dtype, "test")
    inputs = random_inputs(name, original, SEED)
    want = interp.run(original, inputs)
    for seed in range(2):
        texts, final = random_walk(original, 8, SEED * 7 + seed)
        context = f"{name} {dtype} after {texts}\n{print_program(final)}"
        assert check(final) == [], context
        assert replay(original, texts) == final, context
        assert_matches(interp.run(final, inputs), want, original, context)
        assert_matches(run_c(final, inputs), want, original, context + " (compiled)")


def test_a_dtype_the_kernel_does_not_list_is_refused():
    with pytest.raises(ValueError, match="not i32"):
        load("gemm", "i32")
    with pytest.raises(KeyError):
        load("../gemm")

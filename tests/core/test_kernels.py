"""The kernel library: every .dojo file parses, is canonical, checks clean, round-trips
through the printer, and computes what its numpy reference computes on the interpreter
(at two sets of small sizes). Also the registry API of dojo_core.kernels."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import ir
from dojo_core import kernels as K
from dojo_core.kernels.catalog import CATALOG

NAMES = K.list_kernels()
REQUIRED = [
    "matmul", "bmm", "linear_relu", "gemv", "softmax", "log_softmax", "layernorm", "rmsnorm",
    "gelu", "conv2d", "depthwise_conv2d", "maxpool2d", "avgpool2d", "attention", "transpose",
    "row_sum", "batchnorm", "add",
]
SIZE_SETS = ["default", "test_sizes", "alt_sizes"]


def sizes_of(name, which):
    return {} if which == "default" else dict(getattr(K.info(name), which))


def program_at(name, which):
    return K.load_kernel(name, sizes_of(name, which) or None)


# ----------------------------------------------------------------------------- registry

def test_library_is_complete():
    assert NAMES == sorted(NAMES)
    assert len(NAMES) >= 18
    assert set(REQUIRED) <= set(NAMES)
    assert set(NAMES) == set(CATALOG), "every .dojo file has exactly one catalog entry"


def test_unknown_and_malformed_names_are_refused():
    for bad in ["nope", "../ir", "matmul.dojo", "", "a/b", None]:
        with pytest.raises(KeyError):
            K.kernel_path(bad)
    with pytest.raises(KeyError):
        K.info("nope")
    with pytest.raises(KeyError):
        K.load_kernel("matmul", {"Q": 3})


@pytest.mark.parametrize("name", NAMES)
def test_catalog_entry_is_consistent(name):
    entry = K.info(name)
    assert entry.name == name and entry.title and entry.category
    assert K.kernel_path(name).parent == K.KERNEL_DIR
    program = K.load_kernel(name)
    size_names = set(program.size_values)
    for which in ("test_sizes", "alt_sizes"):
        sizes = getattr(entry, which)
        assert set(sizes) == size_names, f"{which} must give every size"
        assert all(1 <= v <= 64 for v in sizes.values()), f"{which} must stay small"
    assert dict(entry.test_sizes) != dict(entry.alt_sizes)
    inputs = {d.name for d in program.arrays if d.kind in ("in", "inout")}
    assert set(entry.input_ranges) <= inputs
    assert all(lo <= hi for lo, hi in entry.input_ranges.values())


@pytest.mark.parametrize("which", SIZE_SETS)
@pytest.mark.parametrize("name", NAMES)
def test_flops_and_bytes(name, which):
    entry = K.info(name)
    program = program_at(name, which)
    sizes = program.size_values
    assert entry.bytes(sizes) > 0
    assert entry.bytes(sizes) == K.declared_bytes(program)
    if entry.flops is not None:
        assert isinstance(entry.flops(sizes), int) and entry.flops(sizes) > 0
    assert (entry.flops is None) == (name == "transpose")


def test_flop_formulas_of_the_gemm_family():
    assert K.info("matmul").flops(K.load_kernel("matmul").size_values) == 2 * 512 ** 3
    conv = K.load_kernel("conv2d").size_values
    assert K.info("conv2d").flops(conv) == 2 * 64 * 64 * 56 * 56 * 9


# ----------------------------------------------------------------------------- source

@pytest.mark.parametrize("name", NAMES)
def test_parses_is_canonical_and_round_trips(name):
    from dojo_core.parser import parse
    from dojo_core.printer import print_program

    text = K.kernel_path(name).read_text()
    program = parse(text, str(K.kernel_path(name)))
    assert program.name == name
    assert len(program.doc) >= 1 and program.doc[0], "a leading '# ' line says what it computes"
    assert text.startswith("# ")
    printed = print_program(program)
    assert printed == text, "library files are stored in the printer's canonical form"
    assert parse(printed) == program
    assert print_program(parse(printed)) == printed
    for which in ("test_sizes", "alt_sizes"):
        resized = program.with_sizes(dict(getattr(K.info(name), which)))
        assert parse(print_program(resized)) == resized


@pytest.mark.parametrize("which", SIZE_SETS)
@pytest.mark.parametrize("name", NAMES)
def test_checks_clean(name, which):
    checker = pytest.importorskip("dojo_core.checker")
    program = program_at(name, which)
    errors = checker.check(program, str(K.kernel_path(name)))
    assert list(errors) == [], "\n".join(str(e) for e in errors)


# ----------------------------------------------------------------------------- data

@pytest.mark.parametrize("name", NAMES)
def test_random_inputs(name):
    program = program_at(name, "test_sizes")
    entry = K.info(name)
    a, b = K.random_inputs(program, seed=3), K.random_inputs(program, seed=3)
    c = K.random_inputs(program, seed=4)
    wanted = {d.name: d for d in program.arrays if d.kind in ("in", "inout")}
    assert set(a) == set(wanted)
    for arr_name, decl in wanted.items():
        arr = a[arr_name]
        assert isinstance(arr, np.ndarray)
        assert arr.shape == K.array_shape(program, decl)
        assert arr.dtype == np.dtype(K.NUMPY_DTYPES[decl.dtype])
        lo, hi = entry.range_of(arr_name)
        assert np.all(arr >= np.float32(lo)) and np.all(arr <= np.float32(hi))
        np.testing.assert_array_equal(arr, b[arr_name])
        if lo < hi and arr.size > 1:
            assert not np.array_equal(arr, c[arr_name])


def test_random_inputs_of_a_pasted_kernel_use_default_ranges():
    from dojo_core.parser import parse
    program = parse("kernel pasted(N = 8)\nin  x: f64[N]\nin  k: i32[2*N]\nout y: f64[N]\n\n"
                    "for i in 0..N:\n  y[i] = x[i]\n")
    data = K.random_inputs(program, seed=0)
    assert data["x"].dtype == np.float64 and data["x"].shape == (8,)
    assert data["k"].dtype == np.int32 and data["k"].shape == (16,)
    assert np.all(np.abs(data["x"]) <= 1) and np.all(np.abs(data["k"]) <= 1)


@pytest.mark.parametrize("name", NAMES)
def test_reference_shapes_and_dtypes(name):
    program = program_at(name, "alt_sizes")
    inputs = K.random_inputs(program, seed=0)
    frozen = {k: v.copy() for k, v in inputs.items()}
    out = K.reference(name, inputs, program.size_values)
    expected = {d.name: d for d in program.arrays if d.kind in ("out", "inout")}
    assert set(out) == set(expected)
    for arr_name, decl in expected.items():
        assert out[arr_name].shape == K.array_shape(program, decl)
        assert out[arr_name].dtype == np.dtype(K.NUMPY_DTYPES[decl.dtype])
        assert np.all(np.isfinite(out[arr_name]))
    for k in inputs:
        np.testing.assert_array_equal(inputs[k], frozen[k])


# ----------------------------------------------------------------------------- semantics

def assert_matches(got, want, label):
    """f32 comparison: rtol 1e-4, atol 1e-5 scaled by the magnitude of the output."""
    assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want.astype(np.float64),
                               rtol=1e-4, atol=1e-5 * scale, err_msg=label)


@pytest.mark.parametrize("which", ["test_sizes", "alt_sizes"])
@pytest.mark.parametrize("name", NAMES)
def test_interpreter_matches_reference(name, which):
    interp = pytest.importorskip("dojo_core.interp")
    program = program_at(name, which)
    inputs = K.random_inputs(program, seed=7)
    want = K.reference(name, inputs, program.size_values)
    got = interp.run(program, {k: v.copy() for k, v in inputs.items()})
    missing = set(want) - set(got)
    assert not missing, f"interpreter did not return {sorted(missing)}"
    for arr_name, value in want.items():
        result = np.asarray(got[arr_name])
        assert result.dtype == value.dtype, f"{arr_name}: dtype {result.dtype} != {value.dtype}"
        assert_matches(result, value, f"{name}.{arr_name} at {program.size_values}")


# ----------------------------------------------------------------------------- any small sizes

def _random_sizes(name, seed):
    """Sizes drawn in 1..9 (every size of the kernel), deterministic in (name, seed)."""
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    return {n: int(rng.integers(1, 10)) for n in K.load_kernel(name).size_values}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", NAMES)
def test_any_small_sizes_check_clean_and_match_reference(name, seed):
    """Edge extents (1, primes) are legal and give the reference results."""
    checker = pytest.importorskip("dojo_core.checker")
    interp = pytest.importorskip("dojo_core.interp")
    program = K.load_kernel(name, _random_sizes(name, seed))
    errors = checker.check(program, name)
    assert list(errors) == [], "\n".join(str(e) for e in errors)
    inputs = K.random_inputs(program, seed=seed)
    want = K.reference(name, inputs, program.size_values)
    got = interp.run(program, inputs)
    for arr_name, value in want.items():
        assert_matches(np.asarray(got[arr_name]), value, f"{name}.{arr_name} at {program.size_values}")

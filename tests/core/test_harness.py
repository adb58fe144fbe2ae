"""The compile / run / measure harness and the C commands of the command line
(DESIGN.md sections 5 and 9)."""
from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dojo_core import harness, interp
from dojo_core.codegen import detect_host_target
from dojo_core.compile import CompileError, cache_dir, compile_shared
from dojo_core.harness import RunError
from dojo_core.kernels import kernel_path, load_kernel, random_inputs
from dojo_core.source import load_source

from kernels_text import VADD

HOST = detect_host_target()


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DOJO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "hcache"))


HALF = """\
kernel half(N = 8)
in  X: f32[N]
out Y: f32[N]
out k: i32[N]

for i in 0..N // 2:
  Y[i] = X[i] * 2
  k[i] = i
"""

SPIN = """\
kernel spin(N = 1000000)
in  X: f32[N]
out s: f32

s = 0
for i in 0..N:
  for j in 0..N:
    for k in 0..N:
      s += X[i] * X[j] + X[k]
"""


# --------------------------------------------------------------------------- compiling

def test_compile_cache_hits_the_second_time():
    source = "int dojo_answer(void) { return 42; }\n/* %f */\n" % time.time()
    first = compile_shared(source, ["-O1"])
    second = compile_shared(source, ["-O1"])
    assert not first.cached and second.cached and first.path == second.path
    assert Path(first.path).parent == cache_dir()
    assert Path(first.path).with_suffix(".c").read_text() == source
    other = compile_shared(source, ["-O2"])            # flags are part of the key
    assert not other.cached and other.path != first.path


def test_concurrent_compiles_of_one_source_are_safe():
    source = "int dojo_twice(int x) { return 2 * x; }\n/* %f */\n" % time.time()
    results, errors = [], []

    def work():
        try:
            results.append(compile_shared(source, ["-O1"]))
        except Exception as exc:                                   # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len({r.path for r in results}) == 1
    assert not [p for p in cache_dir().iterdir() if p.name.startswith("build-")]


def test_bad_source_is_a_clean_compile_error():
    with pytest.raises(CompileError) as exc:
        compile_shared("int broken( { return; }\n", ["-O1"])
    text = str(exc.value)
    assert "failed" in text and "error" in text and "kernel.c" in text and len(text) < 3000


def test_compile_timeout_is_a_clean_error():
    # a translation unit gcc needs seconds for: a long fully unrolled loop nest
    body = "".join(f"  for (int i{k} = 0; i{k} < 64; ++i{k}) s += i{k} * {k};\n" for k in range(400))
    source = f"int slow(void) {{ volatile int s = 0;\n#pragma GCC unroll 64\n{body} return s; }}\n"
    start = time.monotonic()
    with pytest.raises(CompileError, match="timed out after 0.2 s"):
        compile_shared(source + f"/* {time.time()} */", ["-O3"], timeout=0.2)
    assert time.monotonic() - start < 10


def test_missing_compiler_is_a_clean_error(monkeypatch):
    monkeypatch.setenv("DOJO_CC", "no-such-compiler-xyz")
    with pytest.raises(CompileError, match="no C compiler"):
        compile_shared("int x;\n", [])


# --------------------------------------------------------------------------- running

def test_run_c_contract():
    program = load_source(HALF)
    x = np.arange(8, dtype=np.float32)
    before = x.copy()
    out = harness.run_c(program, {"X": x})
    assert np.array_equal(x, before)                      # inputs are never modified
    assert np.array_equal(out["Y"][:4], x[:4] * 2) and np.isnan(out["Y"][4:]).all()
    assert out["k"][:4].tolist() == [0, 1, 2, 3]
    assert (out["k"][4:] == np.iinfo(np.int32).min).all()
    want = interp.run(program, {"X": x})
    assert np.array_equal(out["Y"], want["Y"], equal_nan=True)
    assert np.array_equal(out["k"], want["k"])
    again = harness.run_c(program, {"X": x})
    assert again["Y"] is not out["Y"]                     # fresh arrays every run


def test_run_c_inout_and_scalars():
    program = load_kernel("axpy", {"N": 37})
    inputs = random_inputs(program, 2)
    y = inputs["y"].copy()
    out = harness.run_c(program, inputs)
    assert np.array_equal(inputs["y"], y)
    np.testing.assert_allclose(out["y"], inputs["alpha"] * inputs["x"] + y, rtol=1e-6)


def test_run_c_refuses_bad_inputs():
    program = load_source(VADD)
    a = np.zeros(16, np.float32)
    with pytest.raises(RunError, match="missing input 'B'"):
        harness.run_c(program, {"A": a})
    with pytest.raises(RunError, match="shape"):
        harness.run_c(program, {"A": a, "B": np.zeros(15, np.float32)})
    with pytest.raises(RunError, match="dtype"):
        harness.run_c(program, {"A": a, "B": np.zeros(16, np.float64)})
    with pytest.raises(RunError, match="not an input"):
        harness.run_c(program, {"A": a, "B": a, "C": a})


def test_run_c_in_a_child_process():
    program = load_source(VADD)
    inputs = random_inputs(program, 0)
    out = harness.run_c(program, inputs, timeout=60)
    assert np.array_equal(out["C"], inputs["A"] + inputs["B"])


def test_measure_reports_timings():
    program = load_kernel("softmax", {"N": 64, "M": 128})
    result = harness.measure(program, random_inputs(program, 0), min_time=0.05, min_reps=5,
                             threads=1)
    assert set(result) >= {"median_s", "min_s", "max_s", "reps", "threads"}
    assert 0 < result["min_s"] <= result["median_s"] <= result["max_s"]
    assert result["reps"] >= 5 and result["threads"] == 1
    flushed = harness.measure(program, random_inputs(program, 0), min_time=0.01, min_reps=3,
                              warmup=0, flush_cache=True)
    assert flushed["reps"] >= 3 and flushed["threads"] >= 1


def test_a_hanging_kernel_times_out_and_the_caller_survives():
    program = load_source(SPIN)
    inputs = random_inputs(program, 0)
    start = time.monotonic()
    with pytest.raises(RunError, match="timed out after 3 s"):
        harness.measure(program, inputs, timeout=3)
    with pytest.raises(RunError, match="timed out"):
        harness.run_c(program, inputs, timeout=2)
    assert time.monotonic() - start < 30


def test_verify_and_tolerances():
    program = load_kernel("matmul", {"N": 8, "M": 8, "K": 8})
    inputs = random_inputs(program, 0)
    result = harness.verify(program, program, inputs)
    assert result["verified"] and result["reference"] == "interp" and result["errors"]["C"] < 0.1
    wrong = load_source(VADD.replace("A[i] + B[i]", "A[i] - B[i]"))
    vadd = load_source(VADD)
    bad = harness.verify(wrong, vadd, random_inputs(vadd, 0))
    assert not bad["verified"] and bad["errors"]["C"] > 1
    big = load_kernel("matmul", {"N": 256, "M": 256, "K": 256})
    assert harness.estimated_work(big) > harness.INTERP_LIMIT
    assert harness.estimated_work(program) == 8 * 8 + 8 * 8 * 8
    # per-dtype tolerances: f32 rtol 1e-4 + atol 1e-5 * max|ref|
    ref = {"C": np.array([1.0, 100.0], np.float32)}
    assert harness.compare({"C": np.array([1.0 + 5e-4, 100.0], np.float32)}, ref, vadd)["C"] <= 1
    assert harness.compare({"C": np.array([1.0 + 3e-3, 100.0], np.float32)}, ref, vadd)["C"] > 1
    nan = {"C": np.array([np.nan, 1.0], np.float32)}
    assert harness.compare(nan, ref, vadd)["C"] == float("inf")
    assert harness.compare(nan, nan, vadd)["C"] <= 1
    ints = load_source(HALF)
    assert harness.compare({"k": np.array([1, 2], np.int32)}, {"k": np.array([1, 3], np.int32)},
                           ints)["k"] == float("inf")


def test_parallel_kernels_with_two_threads():
    program = load_kernel("softmax", {"N": 64, "M": 48})
    from dojo_core.transforms import apply_step
    for step in ("parallelize i", "vectorize j", "vectorize k"):
        program = apply_step(program, step)
    inputs = random_inputs(program, 0)
    got = harness.run_c(program, inputs, threads=2)
    assert harness.compare(got, interp.run(program, inputs), program)["Y"] <= 1


# --------------------------------------------------------------------------- command line

CLI_TIMEOUT_S = 300     # the time limit of the dojo fixture (tests/core/conftest.py)


def test_cli_run_backend_c(dojo, tmp_path):
    (tmp_path / "k.dojo").write_text(VADD)
    a, b = np.arange(16, dtype=np.float32), np.ones(16, np.float32)
    np.savez(tmp_path / "in.npz", A=a, B=b)
    r = dojo("run", "k.dojo", "--inputs", "in.npz", "--out", "c.npz", "--backend", "c",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = dojo("run", "k.dojo", "--inputs", "in.npz", "--out", "i.npz", cwd=tmp_path)
    with np.load(tmp_path / "c.npz") as c, np.load(tmp_path / "i.npz") as i:
        assert c.files == ["C"] and np.array_equal(c["C"], i["C"])


def test_cli_codegen(dojo, tmp_path):
    (tmp_path / "k.dojo").write_text(VADD)
    (tmp_path / "s.steps").write_text("vectorize i\n")
    r = dojo("codegen", "k.dojo", "--steps", "s.steps", "--target", "c", "--isa", "x86-avx512",
             cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    assert "void dojo_kernel(const float *restrict A, const float *restrict B, " \
           "float *restrict C)" in r.stdout
    assert "dojo_f32x16" in r.stdout
    r = dojo("codegen", "k.dojo", "--target", "c", "--isa", "sparc", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("k.dojo:1:1: --isa 'sparc': unknown target")
    r = dojo("codegen", "k.dojo", "--target", "cuda", cwd=tmp_path)
    assert r.returncode == 0 and "__global__" in r.stdout
    r = dojo("codegen", "k.dojo", cwd=tmp_path)
    assert r.returncode == 2                              # --target is required


def test_cli_bench(dojo, tmp_path):
    lib = kernel_path("matmul")
    (tmp_path / "s.steps").write_text("fission j after s0\nsplit j2 by 16\ninterchange j21 k\n"
                                      "vectorize j21\nparallelize i\n")
    r = dojo("bench", lib, "--steps", "s.steps", "--size", "N=32", "M=48", "K=40",
             "--threads", "1", "--min-time", "0.02", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verified"] is True and out["verified_against"] == "interp"
    assert out["gflops"] > 0 and out["threads"] == 1 and out["target"] == HOST.name
    assert 0 < out["min_s"] <= out["median_s"] <= out["max_s"]
    assert out["compiler"] and "-O3" in out["flags"] and out["sizes"] == {"N": 32, "M": 48, "K": 40}
    # a copy outside the library: no known flop count
    shutil.copy(lib, tmp_path / "mm.dojo")
    r = dojo("bench", "mm.dojo", "--size", "N=8", "M=8", "K=8", "--min-time", "0.01",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["gflops"] is None
    r = dojo("bench", "mm.dojo", "--threads", "0", cwd=tmp_path)
    assert r.returncode == 1 and "--threads 0" in r.stderr

"""Library generation: build from a fixture record store, compile with the system
compiler via the generated Makefile, run its C test program, and check every exported
function through the Python view against the numpy references.  Small sizes throughout."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from dojo_core import harness, kernels
from dojo_core.codegen.targets import detect_host_target
from dojo_core.library import ArgumentError, LibraryError, build_library, load
from dojo_core.library.select import candidates
from dojo_core.records import RecordStore, fingerprint_of_hardware, machine_fingerprint

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

BOX = "0123456789abcdef"          # the fixture machine's fingerprint (runner "box1", label "lab")
OTHER = "fedcba9876543210"

# (kernel, sizes, steps): legal at these sizes; attention has a temp array (scratch)
TUNED = [
    ("matmul", {"N": 32, "M": 48, "K": 40},
     ["fission j after s0", "split j by 16", "parallelize i", "vectorize j1"]),
    ("attention", {"S": 24, "D": 8}, ["parallelize i", "vectorize d"]),
    ("softmax", {"N": 16, "M": 40}, ["parallelize i"]),
]
UNTUNED = [("layernorm", {"N": 8, "M": 24})]
FALLBACK = {"relu": [{"N": 8, "M": 12}]}


def record(kernel, sizes, steps, median, fingerprint=BOX, verified=True, runner="box1", **extra):
    r = {"kernel": kernel, "sizes": sizes, "steps": steps, "median_s": median, "min_s": median,
         "max_s": median, "verified": verified, "error": None, "fingerprint": fingerprint,
         "runner": runner, "labels": ["lab"] if fingerprint == BOX else [], "hardware": {"cpu": {"model": "Fixture CPU"}},
         "compiler": "cc", "flags": list(detect_host_target().flags), "threads": 2,
         "target": detect_host_target().name, "history_url": f"/s/fixture{kernel}/?step=3",
         "agent": "fixture", "time": "2026-12-01T00:00:00+00:00"}
    r.update(extra)
    return r


def fixture_records():
    rows = []
    for kernel, sizes, steps in TUNED:
        rows.append(record(kernel, sizes, [], 2e-3))
        rows.append(record(kernel, sizes, steps, 1e-3))
        rows.append(record(kernel, sizes, steps[:1], 1e-4, verified=False))     # failed: ignored
        rows.append(record(kernel, sizes, steps, 1e-5, fingerprint=OTHER, runner="other"))
    for kernel, sizes in UNTUNED:
        rows.append(record(kernel, sizes, [], 1e-3))
    return rows


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("library")
    store = RecordStore(root / "records.jsonl")
    for r in fixture_records():
        store.append(r)
    out = root / "lib"
    manifest = build_library(out, "box1", list(store), sizes_wanted=FALLBACK)
    return out, manifest, store


def test_manifest_header_and_provenance(built):
    out, manifest, _ = built
    by_name = {f["name"]: f for f in manifest["functions"]}
    assert sorted(by_name) == ["perfdojo_attention_24x8", "perfdojo_layernorm_8x24",
                               "perfdojo_matmul_32x48x40", "perfdojo_relu_8x12",
                               "perfdojo_softmax_16x40"]
    mm = by_name["perfdojo_matmul_32x48x40"]
    assert (mm["tuned"], mm["steps"], mm["median_s"]) == (True, 4, 1e-3)
    assert mm["speedup"] == pytest.approx(2.0)
    assert by_name["perfdojo_layernorm_8x24"]["tuned"] is False
    assert by_name["perfdojo_layernorm_8x24"]["measured"] is True
    assert by_name["perfdojo_relu_8x12"]["measured"] is False
    assert manifest["fingerprints"] == [BOX]
    header = (out / "perfdojo.h").read_text()
    assert "void perfdojo_matmul_32x48x40(const float *PERFDOJO_RESTRICT A, const float " \
           "*PERFDOJO_RESTRICT B, float *PERFDOJO_RESTRICT C);" in header
    assert "Tuned: 4 steps, measured 1 ms, 2.00x the untransformed kernel on box1" in header
    assert "perfdojo_relu_8x12" in header and "no tuned kernel for these sizes" in header
    assert "void perfdojo_attention_24x8_scratch(" in header
    prov = json.loads((out / "provenance" / "perfdojo_matmul_32x48x40.json").read_text())
    assert prov["steps"] == TUNED[0][2]
    assert prov["history_url"] == "/s/fixturematmul/?step=3"
    assert (prov["runner"], prov["fingerprint"], prov["median_s"]) == ("box1", BOX, 1e-3)
    src = (out / "src" / "perfdojo_matmul_32x48x40.c").read_text()
    assert "dojo_kernel" not in src and "#pragma omp parallel for" in src


def test_target_by_label_and_fingerprint_give_the_same_choice(built, tmp_path):
    _, manifest, store = built
    for target in ("lab", BOX):
        again = build_library(tmp_path / target, target, list(store))
        assert {f["name"]: f["median_s"] for f in again["functions"]} == \
            {f["name"]: f["median_s"] for f in manifest["functions"] if f["measured"]}
    other = build_library(tmp_path / "other", OTHER, list(store))
    assert {f["median_s"] for f in other["functions"]} == {1e-5}


@needs_make
def test_make_builds_both_libraries_and_the_c_tests_pass(built):
    out, manifest, _ = built
    proc = subprocess.run(["make", "-s", "-j2"], cwd=out, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("libperfdojo.a", "libperfdojo.so", "perfdojo_test"):
        assert (out / name).is_file()
    nm = subprocess.run(["nm", "-D", "--defined-only", str(out / "libperfdojo.so")],
                        capture_output=True, text=True)
    if nm.returncode == 0:
        for fn in manifest["functions"]:
            assert f" {fn['name']}\n" in nm.stdout
    run = subprocess.run(["./perfdojo_test"], cwd=out, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout
    assert sorted(l.split()[1] for l in run.stdout.splitlines() if l.startswith("ok ")) == \
        sorted(f["name"] for f in manifest["functions"])


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cmake_builds_the_same_library(built, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(built[0], src, ignore=shutil.ignore_patterns("obj", "*.so", "*.a", "perfdojo_test"))
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(src), "-B", str(build)], ["cmake", "--build", str(build), "-j2"],
                ["ctest", "--output-on-failure"]):
        r = subprocess.run(cmd, cwd=build if cmd[0] == "ctest" else tmp_path, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
    assert (build / "libperfdojo.a").is_file() and (build / "libperfdojo.so").is_file()


@needs_make
def test_c_test_program_detects_a_wrong_reference(built, tmp_path):
    out = tmp_path / "broken"
    shutil.copytree(built[0], out, ignore=shutil.ignore_patterns("obj", "*.so", "*.a", "perfdojo_test"))
    test_c = out / "test" / "perfdojo_test.c"
    text = test_c.read_text()
    marker = "static const double want_Y[] = {"
    assert marker in text
    start = text.index(marker) + len(marker)
    end = text.index(",", start)
    test_c.write_text(text[:start] + repr(float(text[start:end]) + 0.5) + text[end:])
    assert subprocess.run(["make", "-s", "-j2", "perfdojo_test"], cwd=out, capture_output=True,
                          timeout=300).returncode == 0
    run = subprocess.run(["./perfdojo_test"], cwd=out, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert [l for l in run.stdout.splitlines() if l.startswith("FAIL ")][0].split(":")[0] in \
        ("FAIL perfdojo_layernorm_8x24", "FAIL perfdojo_relu_8x12", "FAIL perfdojo_softmax_16x40")


@needs_make
def test_python_view_matches_numpy_references(built):
    out, manifest, _ = built
    lib = load(out)
    for entry in manifest["functions"]:
        fn = lib.functions[entry["name"]]
        program = kernels.load_kernel(entry["kernel"], entry["sizes"])
        inputs = kernels.random_inputs(program, seed=3)
        want = kernels.reference(entry["kernel"], inputs, program=program)
        got = fn(**inputs)
        got = got if isinstance(got, tuple) else (got,)
        outs = [d.name for d in program.arrays if d.kind in ("out", "inout")]
        errors = harness.compare(dict(zip(outs, got)), want, program)
        assert all(e <= 1.0 for e in errors.values()), (entry["name"], errors)
        again = getattr(lib, entry["kernel"])(**inputs)          # dispatch by shapes
        assert np.array_equal(again if not isinstance(again, tuple) else again[0], got[0])
    A, B = (kernels.random_inputs(kernels.load_kernel("matmul", TUNED[0][1]), 1)[n] for n in "AB")
    C = np.zeros((32, 48), np.float32)
    assert lib.perfdojo_matmul_32x48x40(A, B, C=C) is C
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    assert lib.set_threads(1) == 1


@needs_make
def test_python_view_refuses_wrong_arguments(built):
    lib = load(built[0])
    fn = lib.perfdojo_matmul_32x48x40
    A, B = np.zeros((32, 40), np.float32), np.zeros((40, 48), np.float32)
    cases = [
        ((A.T.copy(), B), {}, "argument A has shape (40, 32), expected (32, 40)"),
        ((A.astype(np.float64), B), {}, "argument A has dtype float64, expected float32 (f32)"),
        ((np.asfortranarray(np.zeros((32, 40), np.float32)), B), {}, "argument A must be C-contiguous"),
        ((A.tolist(), B), {}, "argument A must be a numpy array, got list"),
        ((A,), {}, "missing argument B"),
        ((A, B, B), {}, "takes 2 positional arguments (A, B), got 3"),
        ((A, B), {"Z": A}, "no argument named 'Z'"),
        ((A, B), {"C": np.zeros((32, 48), np.float64)}, "argument C has dtype float64"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(ArgumentError) as info:
            fn(*args, **kwargs)
        assert str(info.value).startswith("perfdojo_matmul_32x48x40: ") and message in str(info.value)
    with pytest.raises(ArgumentError, match=r"matmul: no function for input shapes \(\(2, 2\), \(2, 2\)\)"):
        lib.matmul(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32))
    with pytest.raises(AttributeError, match="no function or kernel 'gelu'"):
        lib.gelu   # noqa: B018
    with pytest.raises(LibraryError, match="not a PerfDojo library"):
        load(built[0] / "src")


def test_selection_skips_failed_foreign_and_unreplayable_records(tmp_path):
    sizes = {"N": 16, "M": 40}
    rows = [record("softmax", sizes, [], 3e-3),
            record("softmax", sizes, ["parallelize i"], 2e-3),
            record("softmax", sizes, ["split q by 4"], 1e-3),              # no loop q: skipped
            record("softmax", sizes, ["parallelize i"], 1e-4, verified=False),
            record("softmax", sizes, [], 1e-6, fingerprint=OTHER, runner="other"),
            record("nonesuch", sizes, [], 1e-6), {"garbage": True}]
    found = candidates(rows, {BOX})
    assert [r["median_s"] for r in found[("softmax", (("M", 40), ("N", 16)))]] == [1e-3, 2e-3, 3e-3]
    manifest = build_library(tmp_path / "lib", "box1", rows)
    (fn,) = manifest["functions"]
    assert (fn["median_s"], fn["steps"]) == (2e-3, 1)


def test_refusals_are_one_clear_line(tmp_path):
    rows = [record("softmax", {"N": 16, "M": 40}, [], 1e-3, verified=False)]
    with pytest.raises(LibraryError, match=r"^unknown target 'nobody': no record or runner has that"):
        build_library(tmp_path / "a", "nobody", rows)
    with pytest.raises(LibraryError, match=r"^no verified entries for target 'box1' \(fingerprint "):
        build_library(tmp_path / "b", "box1", rows)
    with pytest.raises(LibraryError, match=r"^unknown kernel\(s\): nonesuch"):
        build_library(tmp_path / "c", "box1", rows, kernels={"nonesuch"})
    rows.append(record("softmax", {"N": 16, "M": 40}, [], 1e-3))
    with pytest.raises(LibraryError, match=r"^--sizes-from: relu \{'Q': 3\}: not a library kernel"):
        build_library(tmp_path / "d", "box1", rows, sizes_wanted={"relu": [{"Q": 3}]})


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "dojo_core", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_cli_build_and_refusals(tmp_path):
    store = tmp_path / "records.jsonl"
    RecordStore(store).append(record("softmax", {"N": 16, "M": 40}, ["parallelize i"], 1e-3))
    ok = cli("library", "build", "--target", "box1", "--out", str(tmp_path / "lib"), "--records", str(store),
             "--measured-only")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == "perfdojo_softmax_16x40: tuned (1 steps)"
    assert (tmp_path / "lib" / "Makefile").is_file()
    refusals = [
        (["--target", "nobody", "--records", str(store)], "library build: unknown target 'nobody'"),
        (["--target", "box1", "--records", str(tmp_path / "none.jsonl")],
         f"library build: --records {tmp_path / 'none.jsonl'}: no such file"),
        (["--target", "box1", "--records", str(store), "--kernels", "matmul", "--measured-only"],
         "library build: no verified entries of kernel(s) matmul for target 'box1'"),
        (["--target", "local", "--records", str(store), "--no-replay", "--measured-only"],
         "library build: no verified entries for target 'local'"),
    ]
    bad_sizes = tmp_path / "sizes.json"
    bad_sizes.write_text('{"relu": [{"N": "x"}]}')
    refusals.append((["--target", "box1", "--records", str(store), "--sizes-from", str(bad_sizes)],
                     f"library build: --sizes-from {bad_sizes}: relu: expected size objects"))
    for args, message in refusals:
        r = cli("library", "build", "--out", str(tmp_path / "x"), *args)
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith(message), r.stderr


def test_bench_record_appends_a_record_of_this_machine(tmp_path):
    store = tmp_path / "store.jsonl"
    steps = tmp_path / "s.steps"
    steps.write_text("parallelize i  # rows in parallel\n")
    r = cli("bench", str(kernels.kernel_path("softmax")), "--steps", str(steps), "--size", "N=8", "M=16",
            "--min-time", "0.01", "--record", str(store))
    assert r.returncode == 0, r.stderr
    (rec,) = list(RecordStore(store))
    assert (rec["kernel"], rec["sizes"], rec["steps"], rec["verified"]) == \
        ("softmax", {"N": 8, "M": 16}, ["parallelize i"], True)
    assert rec["fingerprint"] == machine_fingerprint() and rec["median_s"] > 0
    assert rec["median_s"] == json.loads(r.stdout)["median_s"]
    assert "-shared" in rec["flags"] and rec["target"] == detect_host_target().name


def test_local_and_runner_fingerprints_agree():
    from runners.hardware import fingerprint
    assert fingerprint_of_hardware(fingerprint()) == machine_fingerprint()
    assert fingerprint_of_hardware({}) != machine_fingerprint()


@needs_make
def test_replay_for_a_new_machine(tmp_path):
    """Only another machine measured softmax: building for 'local' replays its sequences
    here, records what held up, and builds from the new records."""
    sizes = {"N": 16, "M": 40}
    store = RecordStore(tmp_path / "records.jsonl")
    for r in [record("softmax", sizes, [], 4e-3, fingerprint=OTHER, runner="other"),
              record("softmax", sizes, ["parallelize i"], 1e-3, fingerprint=OTHER, runner="other"),
              record("softmax", sizes, ["split q by 2"], 2e-3, fingerprint=OTHER, runner="other")]:
        store.append(r)
    manifest = build_library(tmp_path / "lib", "local", list(store), store=store)
    transfers = sorted(manifest["transfers"], key=lambda t: t["source_speedup"])
    assert [(t["source_speedup"], t["verified"]) for t in transfers] == [(2.0, False), (4.0, True)]
    assert "does not replay here" in transfers[0]["error"]
    assert transfers[1]["here_speedup"] > 0 and transfers[1]["held"] == (transfers[1]["here_speedup"] > 1)
    mine = [r for r in store if r["fingerprint"] == machine_fingerprint()]
    assert sorted(len(r["steps"]) for r in mine) == [0, 1]
    assert all(r["verified"] and r["agent"] == "replay" for r in mine)
    assert [r["replayed_from"] for r in mine if r["steps"]] == [OTHER]
    (fn,) = manifest["functions"]
    assert fn["median_s"] == min(r["median_s"] for r in mine)
    assert manifest["fingerprints"] == [machine_fingerprint()]
    again = build_library(tmp_path / "lib2", "local", list(store))     # no second replay
    assert "transfers" not in again


def test_a_local_build_keeps_only_kernels_that_match_the_numpy_reference(tmp_path):
    """Verified against the untransformed kernel is not enough: the plain f32 sum of 2^20
    squares drifts past the tolerance of the float64 reference; a blocked sum does not."""
    sizes = {"N": 1 << 20}
    here = machine_fingerprint()
    rows = [record("sum_squares", sizes, [], 1e-4, fingerprint=here, runner="local"),
            record("sum_squares", sizes, ["split i by 4096", "vectorize i1"], 2e-4, fingerprint=here,
                   runner="local")]
    logged = []
    manifest = build_library(tmp_path / "lib", "local", rows, log=logged.append)
    (fn,) = manifest["functions"]
    assert (fn["steps"], fn["median_s"]) == (2, 2e-4)
    assert any("differ from the numpy reference" in line for line in logged), logged
    rows.append(record("softmax", {"N": 16, "M": 40}, [], 1e-3, fingerprint=here, runner="local"))
    alone = build_library(tmp_path / "lib2", "local", rows[:1] + rows[2:])   # nothing better: left out
    assert [f["kernel"] for f in alone["functions"]] == ["softmax"]
    (gone,) = alone["excluded"]
    assert gone["kernel"] == "sum_squares" and "differs from the numpy reference" in gone["reason"]
    assert not (tmp_path / "lib2" / "src" / "perfdojo_sum_squares_1048576.c").exists()
    with pytest.raises(LibraryError, match="matches the numpy reference"):
        build_library(tmp_path / "lib3", "local", rows[:1])

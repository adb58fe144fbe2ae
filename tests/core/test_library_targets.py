"""Libraries for every kernel and for every ISA.

* ``library build --target local`` on a fresh state (no records at all) exports every
  library kernel at its default sizes -- the target's own ``.steps`` where there is one,
  else the untransformed kernel, each marked with its ``source`` -- and its C tests pass,
  every one of them (sum_squares included: its schedule's partial sums stay within the
  float64 reference's tolerance, where the untransformed f32 running sum of 2^24 squares
  drifts about 190 x beyond it).
* Measured records win over the ``.steps`` schedule; the rest is filled in.
* ``library build --target arm-sve`` (arm-neon, riscv-rvv) cross-compiles the export with
  the target's toolchain, and ``make check`` passes under qemu-user (for riscv-rvv also the
  CMake build's ``ctest``).  To keep ``make test``
  cheap these build a sample of kernels (matmul, softmax, conv2d, relu: the GEMM tile, the
  exponential, the convolution and an untransformed kernel), at their default sizes.
* Emulated runners are no library target; a cross target that cannot be built is refused.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dojo_core.codegen.targets import TARGETS, detect_host_target
from dojo_core.kernels import list_kernels, load_kernel, steps_path
from dojo_core.library import LibraryError, build_library, load
from dojo_core.library.select import RunnerInfo, resolve_target
from dojo_core.records import RecordStore, local_hardware, machine_fingerprint

from cross_support import require_cross_route

ROOT = Path(__file__).resolve().parents[2]
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
CROSS_SAMPLE = "matmul,softmax,conv2d,relu"
ELF_MACHINE = {"aarch64": 183, "riscv64": 243}


def cli(*args, env=None, timeout=900):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "dojo_core", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def make_check(out: Path) -> list:
    """make, then make check; the names of the functions whose C test passed."""
    built = subprocess.run(["make", "-s", "-j2"], cwd=out, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run(["make", "-s", "check"], cwd=out, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return sorted(l.split()[1] for l in run.stdout.splitlines() if l.startswith("ok "))


@needs_make
def test_local_build_on_a_fresh_state_exports_every_kernel(tmp_path):
    state = tmp_path / "state"
    r = cli("library", "build", "--target", "local", "--out", str(tmp_path / "lib"),
            env={"DOJO_STATE_DIR": str(state)})
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "lib" / "library.json").read_text())
    host = detect_host_target()
    by_kernel = {f["kernel"]: f for f in manifest["functions"]}
    excluded = {e["kernel"]: e for e in manifest.get("excluded", [])}
    assert sorted(by_kernel) == list_kernels() and not excluded, excluded
    for name, fn in by_kernel.items():
        assert fn["sizes"] == load_kernel(name).size_values and fn["measured"] is False
        schedule = steps_path(name, host)
        if schedule is not None:
            assert (fn["source"], fn["schedule"], fn["tuned"]) == ("steps", schedule.name, True), fn
            assert f"{fn['name']}: schedule {schedule.name} (" in r.stdout
        else:
            assert (fn["source"], fn["steps"]) == ("untransformed", 0), fn
            assert f"{fn['name']}: untransformed (fallback)" in r.stdout
        prov = json.loads((tmp_path / "lib" / fn["provenance"]).read_text())
        assert prov["source"] == fn["source"] and prov["target"] == host.name
    assert "steps" in {f["source"] for f in by_kernel.values()}
    assert not (state / "measurements.jsonl").exists() or not list(RecordStore(state / "measurements.jsonl"))
    assert make_check(tmp_path / "lib") == sorted(f["name"] for f in manifest["functions"])


def test_measured_records_come_before_the_steps_schedule(tmp_path):
    here = machine_fingerprint()
    sizes = load_kernel("softmax").size_values
    record = {"kernel": "softmax", "sizes": sizes, "steps": ["parallelize i"], "median_s": 1e-3,
              "min_s": 1e-3, "max_s": 1e-3, "verified": True, "fingerprint": here, "runner": "local",
              "hardware": local_hardware(), "compiler": "cc", "flags": list(detect_host_target().flags),
              "threads": 1, "target": detect_host_target().name, "time": "2026-12-01T00:00:00+00:00"}
    manifest = build_library(tmp_path / "lib", "local", [record], kernels={"softmax", "matmul"},
                             complete=True)
    by_kernel = {f["kernel"]: f for f in manifest["functions"]}
    assert (by_kernel["softmax"]["source"], by_kernel["softmax"]["steps"]) == ("measured", 1)
    assert by_kernel["matmul"]["source"] == "steps"
    assert by_kernel["matmul"]["schedule"] == steps_path("matmul", detect_host_target()).name
    header = (tmp_path / "lib" / "perfdojo.h").read_text()
    assert "not measured for this library" in header
    with pytest.raises(LibraryError, match="no verified entries"):
        build_library(tmp_path / "lib2", "local", [record], kernels={"matmul"}, replay=False)


@needs_make
@pytest.mark.parametrize("target", ["arm-sve", "arm-neon", "riscv-rvv"])
def test_cross_library_builds_and_its_c_tests_pass_under_qemu(tmp_path, target):
    require_cross_route(target)
    isa = TARGETS[target]
    store = tmp_path / "records.jsonl"
    # a measurement from a real machine of that ISA (its flags are native ones: the
    # export uses the cross route's instead)
    RecordStore(store).append({
        "kernel": "softmax", "sizes": load_kernel("softmax").size_values, "steps": ["parallelize i"],
        "median_s": 2e-3, "min_s": 2e-3, "max_s": 2e-3, "verified": True, "fingerprint": "00000000000000aa",
        "runner": "board", "hardware": {"cpu": {"model": "Board", "arch": isa.arch}}, "compiler": "gcc 12",
        "flags": list(isa.flags), "threads": 4, "target": target, "time": "2026-12-01T00:00:00+00:00"})
    out = tmp_path / "lib"
    r = cli("library", "build", "--target", target, "--out", str(out), "--records", str(store),
            "--kernels", CROSS_SAMPLE)
    assert r.returncode == 0, r.stderr
    assert f"the tests under {isa.cross.emulator[0]}" in r.stdout
    manifest = json.loads((out / "library.json").read_text())
    assert (manifest["isa"], manifest["arch"]) == (target, isa.arch)
    assert manifest["cross"]["emulator"] == " ".join(isa.cross.emulator)
    by_kernel = {f["kernel"]: f for f in manifest["functions"]}
    assert sorted(by_kernel) == sorted(CROSS_SAMPLE.split(","))
    assert by_kernel["softmax"]["source"] == "measured"
    assert by_kernel["matmul"]["source"] == "steps"
    assert by_kernel["relu"]["source"] == "untransformed"
    prov = json.loads((out / "provenance" / f"{by_kernel['softmax']['name']}.json").read_text())
    assert prov["build_cflags"] == list(isa.cross.cflags) and prov["runner"] == "board"
    makefile = (out / "Makefile").read_text()
    assert f"CC = {' '.join(isa.cross.cc)}\n" in makefile
    assert make_check(out) == sorted(f["name"] for f in manifest["functions"])
    with open(out / "perfdojo_test", "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == ELF_MACHINE[isa.arch]
    with pytest.raises(LibraryError, match="cannot be loaded on this"):
        load(out)
    if target == "riscv-rvv" and shutil.which("cmake"):        # the clang route, with the shim
        src = tmp_path / "cmake-src"
        shutil.copytree(out, src, ignore=shutil.ignore_patterns("obj", "*.so", "*.a", "perfdojo_test"))
        build = tmp_path / "cmake-build"
        for cmd in (["cmake", "-S", str(src), "-B", str(build)], ["cmake", "--build", str(build), "-j2"],
                    ["ctest", "--output-on-failure"]):
            done = subprocess.run(cmd, cwd=build if cmd[0] == "ctest" else tmp_path,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_cross_target_without_its_toolchain_is_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("library", "build", "--target", "arm-sve", "--out", str(tmp_path / "lib"),
            "--kernels", "relu", env={"PATH": str(empty)})
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("library build: --target arm-sve: target arm-sve: the cross compiler")
    assert "apt-get install" in r.stderr and not (tmp_path / "lib").exists()


def test_an_emulated_runner_is_no_library_target():
    runners = [RunnerInfo("sve-emu", ["emulated", "emulated:arm-sve"], "00000000000000ee"),
               RunnerInfo("box", ["lab"], "00000000000000bb")]
    with pytest.raises(LibraryError, match="emulated runner.*measure nothing.*--target arm-sve"):
        resolve_target("sve-emu", [], runners)
    with pytest.raises(LibraryError, match="emulated runner"):
        resolve_target("emulated", [], runners)
    assert resolve_target("lab", [], runners) == {"00000000000000bb"}

"""The runner's measured peaks (runners/peaks.py) and the in-job baseline of the benchmark
command (``python -m dojo_core bench --baseline``): what the speedups and the roofline rest on."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dojo_core import kernels
from dojo_core.codegen.targets import detect_host_target
from runners import peaks
from runners.daemon import parse_args

ROOT = Path(__file__).resolve().parents[2]


def test_peaks_are_measured_on_this_machine_at_its_vector_width():
    got = peaks.measure()
    assert got["gflops"] > 0 and got["gbytes_per_s"] > 0 and got["threads"] >= 1
    assert got["vector_bytes"] == max(16, detect_host_target().vector_bytes)
    assert got["target"] == detect_host_target().name
    assert peaks.MIN_ARRAY_BYTES <= got["array_bytes"] <= peaks.MAX_ARRAY_BYTES


def test_peaks_are_kept_per_machine_and_measured_anew_on_request(tmp_path, monkeypatch):
    calls = []

    def fake(timeout):
        calls.append(timeout)
        return {"gflops": 100.0 + len(calls), "gbytes_per_s": 10.0}

    monkeypatch.setattr(peaks, "measure_in_child", fake)
    hw = {"cpu": {"model": "Test CPU", "logical_cpus": 4}, "compilers": {"gcc": "gcc 12"}}
    first = peaks.cached(str(tmp_path), hw)
    assert first["gflops"] == 101.0 and "measured_at" in first
    assert peaks.cached(str(tmp_path), hw)["gflops"] == 101.0 and len(calls) == 1
    assert peaks.cached(str(tmp_path), hw, fresh=True)["gflops"] == 102.0 and len(calls) == 2
    other = {**hw, "cpu": {"model": "Other CPU", "logical_cpus": 4}}
    assert peaks.cached(str(tmp_path), other)["gflops"] == 103.0            # another machine


def test_a_failed_measurement_registers_without_peaks(tmp_path, monkeypatch):
    monkeypatch.setattr(peaks, "measure_in_child", lambda timeout: None)
    assert peaks.cached(str(tmp_path), {}) is None
    assert not list(tmp_path.iterdir())


def test_the_daemon_chooses_how_to_get_its_peaks():
    base = ["--server", "http://127.0.0.1:9"]
    assert parse_args(base).peaks == "cached"
    assert parse_args(base + ["--peaks", "off"]).peaks == "off"
    with pytest.raises(SystemExit):
        parse_args(base + ["--peaks", "guess"])


def test_bench_baseline_times_the_untransformed_kernel_in_the_same_run(tmp_path):
    steps = tmp_path / "k.steps"
    steps.write_text("split i by 8\n")
    out = subprocess.run([sys.executable, "-m", "dojo_core", "bench", str(kernels.kernel_path("matmul")),
                          "--steps", str(steps), "--size", "N=16", "M=16", "K=16", "--min-time", "0.02",
                          "--baseline"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    for t in (result, result["baseline"]):
        assert t["min_s"] <= t["q1_s"] <= t["median_s"] <= t["q3_s"] <= t["max_s"]
        assert t["median_s"] > 0
    assert result["baseline"]["threads"] == result["threads"]
    plain = subprocess.run([sys.executable, "-m", "dojo_core", "bench", str(kernels.kernel_path("matmul")),
                            "--size", "N=16", "M=16", "K=16", "--min-time", "0.02"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "baseline" not in json.loads(plain.stdout.strip().splitlines()[-1])

"""bench/suite.py's TVM MetaSchedule peer: the tensor-expression twins of bench/suite_tvm.py
compute what the suite's numpy references compute (only where the TVM venv exists and
imports apache-tvm), and without TVM the suite says the peer did not run and why."""
from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dojo_core import harness, suite

ROOT = Path(__file__).resolve().parents[2]
TVM_PYTHON = ROOT / ".venv-tvm" / "bin" / "python"
SUITE_TVM = ROOT / "bench" / "suite_tvm.py"
REQUIRED = {"gemm", "k2mm", "k3mm", "syrk", "syr2k", "atax", "bicg", "mvt", "doitgen"}


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tvm_importable() -> bool:
    if not TVM_PYTHON.exists():
        return False
    proc = subprocess.run([str(TVM_PYTHON), "-c", "import tvm"], capture_output=True)
    return proc.returncode == 0


suite_tvm = _load("bench_suite_tvm", SUITE_TVM)
needs_tvm = pytest.mark.skipif(not _tvm_importable(),
                               reason="apache-tvm not installed (bench/suite_tvm.py's TVM venv)")


def test_the_twins_are_suite_kernels_and_cover_the_subset():
    assert set(suite_tvm.TWINS) <= set(suite.SUITE)
    assert REQUIRED <= set(suite_tvm.TWINS)
    assert {"gemver", "gesummv"} & set(suite_tvm.TWINS)
    assert len(set(suite_tvm.TWINS) & set(suite.list_suite("ml"))) >= 2


@needs_tvm
@pytest.mark.parametrize("name", sorted(suite_tvm.TWINS))
def test_te_twin_computes_the_suite_reference(name, tmp_path):
    for dtype in ("f64", "f32"):
        program = suite.load(name, dtype, "test")
        inputs = suite.random_inputs(name, program, 0)
        np.savez(tmp_path / "in.npz", **inputs)
        out = tmp_path / f"out-{dtype}.npz"
        proc = subprocess.run(
            [str(TVM_PYTHON), str(SUITE_TVM), "--kernel", name, "--dtype", dtype, "--sizes",
             json.dumps(dict(program.size_values)), "--trials", "0", "--rounds", "1",
             "--min-time", "0", "--inputs", str(tmp_path / "in.npz"), "--outputs", str(out)],
            capture_output=True, text=True, timeout=300)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert proc.returncode == 0 and not result.get("error"), (result, proc.stderr[-2000:])
        assert result["verified"] is True and result["median_s"] > 0
        with np.load(out) as z:
            got = {k: np.asarray(z[k]) for k in z.files}
        expected = suite.reference(name, inputs, program)
        assert set(got) == set(expected)
        for k, v in got.items():
            assert v.dtype == expected[k].dtype, (name, dtype, k)
        errors = harness.compare(got, expected, program)
        assert all(e <= 1.0 for e in errors.values()), (name, dtype, errors)


def test_probe_names_why_tvm_cannot_run(tmp_path):
    bench = _load("bench_suite_probe", ROOT / "bench" / "suite.py")
    missing = bench.tvm_probe(str(tmp_path / "no-python"))
    assert missing["run"] is False and "does not exist" in missing["reason"]
    assert bench.tvm_probe(None) == {"run": False, "reason": "switched off (--no-tvm)"}
    if importlib.util.find_spec("tvm") is None:        # this venv has no tvm: the usual case
        import sys
        here = bench.tvm_probe(sys.executable)
        assert here["run"] is False
        assert here["reason"].startswith(f"apache-tvm is not importable by {sys.executable}")


def test_report_columns_of_the_tvm_peer(capsys):
    from bench import suite_report as rep
    agents = ["greedy"]
    rows = [{"kernel": "gemm", "dtype": "f64", "threads": 1, "baseline": {"median_s": 4.0},
             "agents": {"greedy": {"median_s": 1.0, "wall_s": 3.0}},
             "tvm": {"median_s": 2.0, "wall_s": 10.0, "tuning_s": 8.0, "trials": 4}},
            {"kernel": "lu", "dtype": "f64", "threads": 1, "baseline": {"median_s": 1.0},
             "agents": {"greedy": {"median_s": 1.0, "wall_s": 2.0}},
             "tvm": {"cell": "no TE twin", "reason": "no TE twin for lu"}}]
    for r in rows:
        r["speedups"] = rep.speedups(r, agents)
    assert rows[0]["speedups"]["tvm/base"] == pytest.approx(2.0)
    assert rows[0]["speedups"]["greedy/tvm"] == pytest.approx(2.0)
    assert rows[1]["speedups"]["tvm/base"] is None
    gm = rep.geomeans(rows, agents, [1])["1"]
    assert gm["tvm/base"] == {"value": pytest.approx(2.0), "n": 1}
    assert gm["greedy/tvm"]["n"] == 1 and gm["greedy/base"]["n"] == 2
    assert gm["tvm_wall_s"] == pytest.approx(10.0) and gm["tvm_tuning_s"] == pytest.approx(8.0)
    rep.print_table(rows, agents, [1], {"1": gm})
    printed = capsys.readouterr().out
    head = printed.splitlines()[0].split()
    assert head[-4:] == ["tvm_ms", "tvm/base", "greedy/tvm", "tvm_wall_s"]
    assert "no TE twin" in printed
    assert rep.errors_of({"tvm": {"error": "tvm: boom"}}) == ["tvm: boom"]


def test_suite_reports_the_missing_tvm_peer(tmp_path, monkeypatch, capsys):
    """Without a TVM environment the run goes on: every TVM cell says "not run", the JSON
    and the header and footer say why, and no TVM ratio exists."""
    monkeypatch.setenv("DOJO_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "suite.json"
    bench = _load("bench_suite_missing", ROOT / "bench" / "suite.py")
    missing = tmp_path / "no-venv" / "bin" / "python"
    code = bench.main(["--kernels", "atax", "--dtypes", "f64", "--dataset", "test",
                       "--threads", "1", "--agents", "greedy", "--budget", "1",
                       "--rounds", "1", "--min-time", "0.002", "--search-min-time", "0.002",
                       "--polly-cc", "no-such-clang", "--tvm-python", str(missing),
                       "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["tvm"]["run"] is False
    assert str(missing) in doc["tvm"]["reason"] and "does not exist" in doc["tvm"]["reason"]
    assert f"# tvm: not run ({doc['tvm']['reason']})" in printed
    assert f"tvm: not run ({doc['tvm']['reason']})" in printed.split("\n\n")[-1]
    [row] = doc["rows"]
    assert row["tvm"] == {"cell": "not run", "reason": doc["tvm"]["reason"]}
    assert row["speedups"]["tvm/base"] is None and row["speedups"]["greedy/tvm"] is None
    assert doc["geomeans"]["1"]["tvm/base"]["n"] == 0
    assert row["baseline"]["median_s"] > 0

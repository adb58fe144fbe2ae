"""bench/suite.py (the agents on the benchmark suite against gcc, Polly and numpy) on one tiny
kernel at the suite's test sizes: the JSON has the rows, Polly's outputs were verified."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("clang-14") is None,
    reason="clang-14 is missing: bench/suite.py's Polly peer needs it "
           "(apt-get install clang-14 libomp-14-dev)")


def _load_script():
    spec = importlib.util.spec_from_file_location("bench_suite", ROOT / "bench" / "suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_suite_bench_on_a_tiny_kernel(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOJO_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "suite.json"
    bench = _load_script()
    code = bench.main(["--kernels", "atax", "--dtypes", "f32", "--dataset", "test",
                       "--threads", "1", "--agents", "greedy,mcts", "--budget", "2",
                       "--rounds", "1", "--min-time", "0.005", "--search-min-time", "0.005",
                       "--no-tvm", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["machine"]["isa"] in printed and "load average at start" in printed
    assert len(doc["load_average"]["start"]) == 3 and len(doc["load_average"]["end"]) == 3
    assert doc["tvm"]["run"] is False and doc["tvm"]["reason"]
    [row] = doc["rows"]
    assert (row["kernel"], row["dtype"], row["threads"]) == ("atax", "f32", 1)
    assert "error" not in row, row.get("error")
    assert row["baseline"]["median_s"] > 0
    polly = row["polly"]
    assert "error" not in polly, polly.get("error")
    assert polly["verified"] is True and polly["verified_against"] == "baseline"
    assert polly["median_s"] > 0 and "-polly" in polly["flags"]
    assert "clang" in polly["compiler"]
    assert row["numpy"]["verified"] is True and row["numpy"]["median_s"] > 0   # atax: a peer
    for agent in ("greedy", "mcts"):
        cell = row["agents"][agent]
        assert "error" not in cell, cell.get("error")
        assert cell["verified"] is True and cell["median_s"] > 0
        assert 1 <= cell["measurements"] <= 2 and cell["wall_s"] > 0
        assert isinstance(cell.get("phases"), dict)
        assert cell["outcome"] == ("kept" if cell["steps"] else "nothing found")
        # a search that kept the kernel as it was is the baseline's program: its timings
        assert ("timed_as" in cell) == (cell["steps"] == [])
        if not cell["steps"]:
            assert cell["median_s"] == row["baseline"]["median_s"]
    sp = row["speedups"]
    for col in ("polly/base", "numpy/base", "greedy/base", "greedy/polly", "mcts/base",
                "mcts/polly"):
        assert sp[col] > 0, col
    gm = doc["geomeans"]["1"]
    assert gm["polly/base"]["n"] == 1 and gm["greedy/base"]["value"] == pytest.approx(
        sp["greedy/base"])


def test_suite_bench_for_the_avx2_target(tmp_path, monkeypatch, capsys):
    """``--target x86-avx2``: the baseline, Polly and the agents build AVX2 code (Polly gets
    ``-mno-avx512f`` where the target has it), and on an AVX-512 machine numpy runs
    OpenBLAS's AVX2 (Haswell) kernel."""
    from dojo_core.codegen import detect_host_target
    if detect_host_target().name not in ("x86-avx2", "x86-avx512"):
        pytest.skip(f"x86-avx2 code does not run on this {detect_host_target().name} machine")
    monkeypatch.setenv("DOJO_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "suite.json"
    code = _load_script().main([
        "--kernels", "atax", "--dtypes", "f32", "--dataset", "test", "--threads", "1",
        "--agents", "greedy", "--budget", "1", "--rounds", "1", "--min-time", "0.005",
        "--search-min-time", "0.005", "--no-tvm", "--target", "x86-avx2", "--out", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["machine"]["isa"] == "x86-avx2" and "-mno-avx512f" in doc["machine"]["cflags"]
    [row] = doc["rows"]
    assert "-mno-avx512f" in row["polly"]["flags"] and row["polly"]["verified"] is True
    assert "-mno-avx512f" in row["baseline_build"]["flags"]
    assert row["agents"]["greedy"]["verified"] is True
    hello = doc["numpy_workers"]["1"]
    if detect_host_target().name == "x86-avx512":      # else AVX2 is the host's own width
        assert hello["library_isa"].get("OPENBLAS_CORETYPE") == "Haswell", hello
        kernels = {p.get("architecture") for p in hello.get("threadpoolctl") or []
                   if p.get("internal_api") == "openblas"}
        assert kernels <= {"Haswell"}, kernels           # threadpoolctl, where installed
    else:
        assert hello["library_isa"] == {}, hello


def test_suite_bench_refuses_a_target_that_does_not_run_here(capsys):
    with pytest.raises(SystemExit) as exc:
        _load_script().main(["--kernels", "atax", "--target", "riscv-rvv", "--no-tvm"])
    assert exc.value.code == 2
    assert "does not run natively on this" in capsys.readouterr().err


def test_a_search_outcome_says_whether_something_was_found_and_confirmed():
    import sys
    sys.path.insert(0, str(ROOT / "bench"))
    from suite_kernel import search_outcome
    from dojo_core.agents.base import Measurement, SearchResult, Trial
    root, faster = Trial((), Measurement(2.0)), Trial(("vectorize i",), Measurement(1.0))
    found = SearchResult("greedy", "k", None, trials=[root, faster])
    assert search_outcome(found) == "kept"
    found.confirmation = {"steps": ["vectorize i"], "root_s": [2.0], "best_s": [2.1],
                          "kept": "root"}
    assert search_outcome(found) == "not confirmed"
    slower = SearchResult("greedy", "k", None, trials=[root, Trial(("split i by 2",),
                                                                     Measurement(3.0))])
    assert search_outcome(slower) == "nothing found"


def _bench_module(name):
    import importlib
    import sys
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    return importlib.import_module(name)


def _contender(name, rounds):
    c = _bench_module("suite_kernel").Contender(name)
    c.samples = [(t, t * 0.9) for t in rounds]
    return c


def test_rounds_of_one_mode_are_compared_by_their_median():
    rounds = _bench_module("suite_kernel")
    base, agent = _contender("baseline", [2.0, 2.2, 2.1]), _contender("a", [1.0, 1.4, 1.1])
    assert not rounds.bimodal([base, agent])
    cell = rounds.summarize(agent, {})
    assert cell["figure_s"] == 1.1 == cell["median_s"]


def test_bimodal_rounds_compare_every_contender_by_its_fastest_round():
    """The baseline's rounds at 13.6, 23.5 and 21.0 us and the agent's at 27.3, 27.4 and
    13.3 (the same code in two modes): medians would read 0.77x, fastest rounds 1.02x."""
    rounds = _bench_module("suite_kernel")
    speedups = _bench_module("suite_report").speedups
    base = _contender("baseline", [13.6e-6, 23.5e-6, 21.0e-6])
    agent = _contender("a", [27.3e-6, 27.4e-6, 13.3e-6])
    assert rounds.bimodal([base, agent])
    row = {"baseline": rounds.summarize(base, {}, True), "polly": {}, "numpy": {},
           "agents": {"a": rounds.summarize(agent, {}, True)}}
    assert row["baseline"]["median_s"] == 21.0e-6 and row["baseline"]["figure_s"] == 13.6e-6
    assert speedups(row, ["a"])["a/base"] == pytest.approx(13.6 / 13.3)

"""Timings that do not depend on what was measured before: the measuring child's buffers
(measure_worker.mapped_empty: each at a 2 MiB boundary, whatever the jobs before it
allocated), ``LocalEvaluator.remeasure(fresh=True)`` (a child of its own, interleaved
rounds) and bench/agents.py's table (each kernel's comparison set timed in a child that
measured nothing else)."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

from dojo_core import harness
from dojo_core.agents import measure_worker
from dojo_core.agents.evaluators import LocalEvaluator
from dojo_core.agents.measure_worker import BUFFER_ALIGN, MeasureWorker, mapped_empty
from dojo_core.kernels import load_kernel, random_inputs
from dojo_core.records import program_hash
from dojo_core.replay_cache import SHARED

ROOT = Path(__file__).resolve().parents[2]
# sizes at which every target's .steps applies (softmax.steps splits the rows by 16)
SMALL = {"softmax": {"N": 32, "M": 16}, "layernorm": {"N": 8, "M": 16}}
BIG_SOFTMAX = {"N": 512, "M": 1024}                 # 2 MiB arrays: a different heap history
SOFTMAX_STEPS = ("split i by 4",)


@pytest.mark.parametrize("shape,dtype", [((), np.float32), ((7,), np.int8),
                                         ((3, 5), np.float64), ((1025, 513), np.float32)])
def test_mapped_empty_is_aligned_contiguous_and_writable(shape, dtype):
    a = mapped_empty(shape, dtype)
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.ctypes.data % BUFFER_ALIGN == 0
    assert a.flags.c_contiguous and a.flags.writeable
    a[...] = 3
    assert np.all(a == 3)


def _job(program, root, inputs, want, params):
    lib = harness.build(program)
    return {"root_key": SHARED.root_key(root), "program": program, "path": lib.path,
            "params": params, "threads": 1, "inputs": inputs, "reference": want}


def test_child_buffers_are_aligned_whatever_was_measured_before(monkeypatch):
    """The measuring child's job (``_run_job``, run here in-process) hands the kernel buffers
    at 2 MiB boundaries for verification and for timing, also after a job with large arrays
    has reshaped the heap."""
    seen = []
    real_compare = harness.compare

    def spy_compare(outputs, reference, program, *rest):
        seen.append(("verify", [a.ctypes.data for a in outputs.values()]))
        return real_compare(outputs, reference, program, *rest)

    def fake_time(dll, arrays, **params):
        seen.append(("time", [a.ctypes.data for a in arrays]))
        return {"median_s": 1.0, "min_s": 1.0, "max_s": 1.0, "reps": 1, "threads": 1}

    monkeypatch.setattr(harness, "compare", spy_compare)
    monkeypatch.setattr(harness, "_time_in_process", fake_time)
    roots = {}
    for sizes in (BIG_SOFTMAX, SMALL["softmax"]):
        root = load_kernel("softmax", sizes)
        inputs = random_inputs(root, 0)
        want = harness.run_c(root, inputs)
        want = {k: v.copy() for k, v in want.items()}
        answer = measure_worker._run_job(harness, roots, _job(root, root, inputs, want, {}))
        assert answer["verified"], answer
    assert [kind for kind, _ in seen] == ["verify", "time"] * 2
    assert all(address % BUFFER_ALIGN == 0 for _, addresses in seen for address in addresses)


def _spy_pids(monkeypatch):
    """Record (child pid, kernel name, min_time, state hash) of every MeasureWorker job."""
    calls = []
    real = MeasureWorker.measure

    def spy(self, **job):
        answer = real(self, **job)
        calls.append((self._proc.pid if self._proc else None, job["program"].name,
                      job["params"]["min_time"], program_hash(job["program"])))
        return answer
    monkeypatch.setattr(MeasureWorker, "measure", spy)
    return calls


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_remeasure_fresh_times_in_a_child_of_its_own(monkeypatch):
    calls = _spy_pids(monkeypatch)
    root = load_kernel("softmax", SMALL["softmax"])
    ev = LocalEvaluator(min_time=0.001, threads=1)
    try:
        assert ev.evaluate(root, ()).median_s
        persistent = calls[-1][0]
        del calls[:]
        times = ev.remeasure([(root, ()), (root, SOFTMAX_STEPS)], rounds=3, fresh=True)
        assert [len(t) for t in times] == [3, 3]
        pids = {pid for pid, *_ in calls}
        assert len(calls) == 6 and len(pids) == 1 and persistent not in pids
        assert not _alive(pids.pop())                   # ended when remeasure returned
        del calls[:]
        ev.remeasure([(root, ())], rounds=1)            # not fresh: the persistent child
        assert [pid for pid, *_ in calls] == [persistent]
    finally:
        ev.close()


def _bench_agents():
    spec = importlib.util.spec_from_file_location("bench_agents", ROOT / "bench" / "agents.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_times_each_kernels_comparison_in_a_fresh_child(monkeypatch, tmp_path):
    """Every figure of the table is timed (confirm min_time) in a child that timed nothing
    but that kernel's comparison set, in interleaved rounds, and every state of the set
    (untransformed, .steps, the agent's best) is among them."""
    bench = _bench_agents()
    real_load = bench.load_kernel
    monkeypatch.setattr(bench, "load_kernel", lambda name: real_load(name, SMALL[name]))
    monkeypatch.setattr(bench, "numpy_time", lambda *a, **k: None)
    calls = _spy_pids(monkeypatch)
    out = tmp_path / "agents.json"
    assert bench.main(["--kernels", "softmax,layernorm", "--agents", "greedy",
                       "--budgets", "3", "--min-time", "0.001", "--confirm-time", "0.002",
                       "--confirm-rounds", "2", "--no-tvm", "--out", str(out)]) == 0
    confirm = [c for c in calls if c[2] == 0.002]
    search = [c for c in calls if c[2] == 0.001]
    assert confirm and search
    by_pid = {}
    for pid, name, _, key in confirm:
        by_pid.setdefault(pid, []).append((name, key))
    assert len(by_pid) == 2                                       # one child per kernel
    assert not set(by_pid) & {pid for pid, *_ in search}
    for jobs in by_pid.values():
        assert len({name for name, _ in jobs}) == 1               # that kernel only
        states = [key for _, key in jobs]
        n = len(set(states))
        assert len(states) == 2 * n and states[:n] == states[n:]  # two interleaved rounds
    report = json.loads(out.read_text())
    for name in ("softmax", "layernorm"):
        entry = report["kernels"][name]
        assert entry["baseline_s"] and entry["steps_s"]
        row = entry["agents"]["greedy"]["budgets"]["3"]
        assert row["median_s"] and row["speedup"] == pytest.approx(entry["baseline_s"] / row["median_s"])


def test_measuring_child_runs_blas_single_threaded(monkeypatch):
    """The measuring child calls no BLAS, so OpenBLAS there gets one thread (no pool whose
    threads spin beside the kernel's), whatever the parent's environment asks for."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    root = load_kernel("softmax", SMALL["softmax"])
    inputs = random_inputs(root, 0)
    want = {k: v.copy() for k, v in harness.run_c(root, inputs).items()}
    worker = MeasureWorker()
    try:
        answer = worker.measure(timeout=60, **_job(root, root, inputs, want,
                                                   {"min_time": 0.0, "min_reps": 1, "warmup": 0,
                                                    "threads": 1, "flush_cache": False}))
        assert answer.get("verified"), answer
        environ = Path(f"/proc/{worker._proc.pid}/environ").read_bytes().split(b"\0")
    finally:
        worker.close()
    assert b"OPENBLAS_NUM_THREADS=1" in environ
    assert b"OPENBLAS_NUM_THREADS=2" not in environ

"""The parent's side of bench/suite.py's TVM MetaSchedule peer: whether an interpreter can
run it (``tvm_probe``) and one row's cell (``tvm_cell``: the child ``suite_tvm.py`` tunes
and times, its outputs are checked here against the suite's numpy reference).

Guarantees: neither raises; a cell is a time or an ``error`` that says why there is none.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import short
from dojo_core import harness, suite

ROOT = Path(__file__).resolve().parent.parent
TVM_SCRIPT = ROOT / "bench" / "suite_tvm.py"
TVM_VENV_PYTHON = ROOT / ".venv-tvm" / "bin" / "python"
NO_TWIN = "no TE twin"


def tvm_probe(python, timeout: float = 300) -> dict:
    """What the TVM peer can do with interpreter ``python``: ``{"run": True, "python",
    "version", "twins", "dtypes"}`` when it imports apache-tvm, else ``{"run": False,
    "reason"}`` (no interpreter given or found, or tvm not importable by it)."""
    if not python:
        return {"run": False, "reason": "switched off (--no-tvm)"}
    if shutil.which(python) is None:
        return {"run": False,
                "reason": f"no TVM environment: {python} does not exist (make one with "
                          f"apache-tvm, see bench/suite_tvm.py; or pass --tvm-python)"}
    try:
        proc = subprocess.run([python, str(TVM_SCRIPT), "--list"], capture_output=True,
                              text=True, timeout=timeout)
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except Exception as exc:                                          # noqa: BLE001
        return {"run": False, "python": python,
                "reason": f"{python} {TVM_SCRIPT.name} --list failed: {short(exc)}"}
    if not found.get("tvm"):
        return {"run": False, "python": python,
                "reason": f"apache-tvm is not importable by {python} ({found.get('error')})"}
    return {"run": True, "python": python, "version": found["tvm"], "twins": found["twins"],
            "dtypes": found["dtypes"]}


def last_json(text: str):
    """The last line of ``text`` that is a JSON object, or None (TVM logs to stdout too)."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def tvm_cell(name, dtype, threads, args, tvm) -> dict:
    """The TVM cell of one row (never raises): the child's tuned time on the suite's inputs,
    its outputs checked here against the suite's numpy reference, or an ``error``."""
    cell = {"trials": args.tvm_trials, "python": tvm["python"], "tvm": tvm["version"]}
    started = time.monotonic()
    try:
        program = suite.load(name, dtype, args.dataset)
        inputs = suite.random_inputs(name, program, 0)
        sizes = dict(program.size_values)
        with tempfile.TemporaryDirectory(prefix="dojo-suite-tvm-") as work:
            in_path, out_path = Path(work) / "inputs.npz", Path(work) / "outputs.npz"
            np.savez(in_path, **inputs)
            cmd = [tvm["python"], str(TVM_SCRIPT), "--kernel", name, "--dtype", dtype,
                   "--sizes", json.dumps(sizes), "--trials", str(args.tvm_trials),
                   "--threads", str(threads), "--rounds", str(args.rounds),
                   "--min-time", str(args.min_time), "--seed", str(args.seed),
                   "--inputs", str(in_path), "--outputs", str(out_path)]
            # a session of its own: on a timeout, MetaSchedule's builder and runner workers
            # (the child's children) go with it
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, cwd=work, start_new_session=True)
            try:
                stdout, stderr = proc.communicate(timeout=args.tvm_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                return dict(cell, wall_s=time.monotonic() - started,
                            error=f"tvm: no result within --tvm-timeout {args.tvm_timeout:g} s")
            cell["wall_s"] = time.monotonic() - started
            result = last_json(stdout)
            if result is None:
                tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
                return dict(cell, error=f"tvm: exit {proc.returncode}: {short(tail[0])}")
            for key in ("tuning_s", "median_s", "min_s", "rounds", "target", "error"):
                if key in result:
                    cell[key] = result[key]
            cell["child_check"] = {"verified": result.get("verified"),
                                   "max_error": result.get("max_error")}
            if result.get("error"):
                cell.pop("median_s", None)
                cell["error"] = f"tvm: {result['error']}"
                return cell
            with np.load(out_path) as z:
                got = {k: np.asarray(z[k]) for k in z.files}
        errors = harness.compare(got, suite.reference(name, inputs, program), program)
        worst = max(errors.values(), default=0.0)
        cell.update(verified=all(e <= 1.0 for e in errors.values()), max_error=worst,
                    verified_against="numpy reference")
        if not cell["verified"]:
            cell.pop("median_s", None)
            cell["error"] = (f"tvm: outputs differ from the suite's numpy reference (worst "
                             f"{worst:.3g} x the tolerance)")
    except Exception as exc:                                          # noqa: BLE001
        cell.setdefault("wall_s", time.monotonic() - started)
        cell["error"] = f"tvm: {short(exc)}"
    return cell

"""Replay for a new runner through the web app, end to end: a real server
(``python -m webapp.launch``) and a real runner daemon on this machine (``box-here``, no
measurements).  The other machine (``box-far``, other hardware) cannot exist here: the test
speaks the runner protocol for it over HTTP (register, heartbeat, claim, result) with
measurements it states.  ``library build --target box-here --server URL`` must then submit
box-far's best sequence and the untransformed kernel to box-here as benchmark jobs, wait
for them, report the transfer and build the library from box-here's own results."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dojo_core.codegen.targets import detect_host_target
from dojo_core.records import fingerprint_of_hardware, machine_fingerprint
from live_server import ROOT, Server, http

SIZES = {"N": 16, "M": 40}
STEPS = ["parallelize i"]
HW_FAR = {"cpu": {"model": "Far CPU", "arch": "x86_64", "flags": ["avx2"], "logical_cpus": 64},
          "compilers": {"cc": "cc 14"}, "gpus": []}


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path, local_runner=False)
    yield s
    s.stop()


def far_measurement(s: Server, secret: str, steps, median: float) -> int:
    auth = {"Authorization": f"Bearer {secret}"}

    def post(path, data):
        import urllib.request
        req = urllib.request.Request(s.url + path, data=json.dumps(data).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **auth})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    post("/api/runners/heartbeat", {"current_job": None})
    job = s.submit(kernel="softmax", sizes=SIZES, steps=steps, runner="box-far")
    attempt = post(f"/api/runners/jobs/{job}/claim", {})["attempt"]
    target = detect_host_target()
    post(f"/api/runners/jobs/{job}/result", {"attempt": attempt, "state": "done", "result": {
        "median_s": median, "min_s": median, "max_s": median, "verified": True, "compiler": "cc 14",
        "flags": list(target.flags), "threads": 64, "target": target.name}})
    assert s.job(job)["state"] == "done"
    return job


def test_library_for_a_runner_without_measurements_replays_there(server, tmp_path):
    s = server
    token = s.token(uses=2)
    status, answer = http("POST", s.url + "/api/runners/register",
                          {"token": token, "name": "box-far", "labels": ["far"], "hardware": HW_FAR,
                           "sandbox": {}})
    assert status in (200, 201), answer
    far_measurement(s, answer["secret"], [], 4e-3)
    far_measurement(s, answer["secret"], STEPS, 1e-3)
    s.start_runner("box-here", "here", token)
    s.wait_online("box-here")
    out = tmp_path / "lib"
    env = dict(s.env, DOJO_STATE_DIR=str(tmp_path / "local-state"),
               DOJO_API_TOKEN=getattr(s, "api_token", None) or os.environ.get("DOJO_API_TOKEN", ""))
    r = subprocess.run([sys.executable, "-m", "dojo_core", "library", "build", "--target", "box-here",
                        "--out", str(out), "--server", s.url, "--measured-only"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + s.logs()
    transfer = [l for l in r.stderr.splitlines() if l.startswith("transfer ")]
    assert len(transfer) == 1, r.stderr
    assert transfer[0].startswith(f"transfer softmax(N=16,M=40): 1 steps from box-far "
                                  f"[{fingerprint_of_hardware(HW_FAR)}]: 4.00x there, ")
    manifest = json.loads((out / "library.json").read_text())
    assert manifest["fingerprints"] == [machine_fingerprint()]
    (t,) = manifest["transfers"]
    assert t["verified"] is True and t["here_speedup"] > 0 and t["held"] == (t["here_speedup"] > 1)
    (fn,) = manifest["functions"]
    prov = json.loads((out / "provenance" / f"{fn['name']}.json").read_text())
    assert prov["runner"] == "box-here" and prov["fingerprint"] == machine_fingerprint()
    assert prov["steps"] in ([], STEPS) and prov["median_s"] > 0
    jobs = [s.job(j) for j in (prov["job"],)]
    assert jobs[0]["runner"] == "box-here" and jobs[0]["state"] == "done"

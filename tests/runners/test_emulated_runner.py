"""Emulated runners, end to end: a real server (``python -m webapp.launch``, embedded broker)
and a real runner daemon started with ``--emulate arm-sve`` (heartbeat process, Celery
worker, sandbox, the aarch64 cross gcc and qemu-aarch64).  A benchmark sent from the API to
it comes back "correct on arm-sve (emulated)" with no time, and the editor and runners pages
say so.  An emulated runner is never picked for "any runner" and an agent refuses it.
Without the Arm toolchain the test skips (fails under CI)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runners import execute, sandbox

from cross_support import require_cross_route
from kernels_text import matmul_text
from live_server import ROOT, Server
from webapp.launched import request

TARGET = "arm-sve"
SOURCE = matmul_text(24, 40, 16, "mm")
STEPS = ["fission j after s0", "interchange j2 k", "split j2 by 8", "vectorize j21",
         "parallelize i"]


def _require():
    require_cross_route(TARGET)


def _call(method, url, data=None, token=None):
    status, body = request(method, url, data, timeout=30, token=token)
    return status, body.decode()


def _json(method, url, data=None, token=None):
    status, text = _call(method, url, data, token)
    return status, json.loads(text or "{}")


def _start_emulated(s: Server, name: str, token: str):
    log = open(s.tmp / f"runner-{name}.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "runners", "--server", s.url, "--token", token, "--name", name,
         "--emulate", TARGET, "--state-dir", str(s.tmp / f"runner-{name}"), "--grace", "5"],
        cwd=ROOT, env=s.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    s.runners[name] = proc
    return proc


@pytest.fixture
def server(tmp_path):
    _require()
    s = Server(tmp_path, local_runner=False)
    yield s
    s.stop()


def test_benchmark_on_an_emulated_arm_runner_comes_back_correct_emulated(server):
    s = server
    _start_emulated(s, "sve-emu", s.token())
    s.wait_online("sve-emu")
    runner = s.runner("sve-emu")
    assert runner["hardware"]["emulated"]["target"] == TARGET
    assert runner["hardware"]["cpu"]["arch"] == "aarch64" and "sve" in runner["hardware"]["cpu"]["flags"]
    assert "emulated" in runner["labels"] and f"emulated:{TARGET}" in runner["labels"]
    assert "cpu" not in runner["labels"]

    status, body = _json("POST", s.url + "/api/sessions", {"source": SOURCE})
    assert status == 201, body
    sid, owner = body["id"], body["owner_token"]
    for parent, action in enumerate(STEPS):
        status, step = _json("POST", f"{s.url}/api/sessions/{sid}/steps",
                             {"parent": parent, "action": action}, owner)
        assert status in (200, 201), step
    # "any runner": an emulated runner gives no times, so it is not a candidate
    status, refused = _json("POST", f"{s.url}/api/sessions/{sid}/steps/{len(STEPS)}/benchmark",
                            {"runner": None}, owner)
    assert status == 409, refused
    status, sent = _json("POST", f"{s.url}/api/sessions/{sid}/steps/{len(STEPS)}/benchmark",
                         {"runner": "sve-emu", "options": {"threads": 3, "timeout_s": 120}}, owner)
    assert status == 202, sent
    job = s.wait_job(sent["job"], ("done", "failed", "lost"), timeout=180)
    assert job["state"] == "done", (job, s.logs())
    res = job["result"]
    assert res["verdict"] == f"correct on {TARGET} (emulated)" and res["emulated"] is True
    assert res["verified"] is True and res["target"] == TARGET
    assert res["median_s"] is None and res["gflops"] is None and res["min_s"] is None
    assert res["emulator"].startswith("qemu-aarch64") and "aarch64-linux-gnu-gcc" in res["compiler"]
    assert res["hardware"]["emulated"]["target"] == TARGET

    status, page = _call("GET", f"{s.url}/s/{sid}/")
    assert status == 200
    assert f"correct on {TARGET} (emulated)" in page
    status, page = _call("GET", f"{s.url}/runners/")
    assert status == 200 and 'class="pill emulated"' in page
    assert f"correct on {TARGET} (emulated)" in page

    # an agent ranks steps by time: an emulated runner is refused with the reason
    status, answer = _json("POST", f"{s.url}/api/sessions/{sid}/agents",
                           {"agent": "random", "budget": 3, "runner": "sve-emu"}, owner)
    assert status == 409 and "is emulated" in answer.get("error", ""), answer


def test_emulated_job_that_differs_is_incorrect_and_fails():
    """interpret(): an emulated check whose outputs differ is a failed job whose error
    starts with the verdict; one that matches is done with no time."""
    limits = sandbox.Limits(wall_s=10)
    line = json.dumps({"verified": False, "emulated": True, "target": TARGET, "median_s": None,
                       "verdict": f"incorrect on {TARGET} (emulated)", "max_error": 3.5})
    bad = sandbox.Outcome(1, stdout=line + "\n", stderr="kernel.dojo:1:1: incorrect on arm-sve "
                          "(emulated): outputs differ from the untransformed kernel (worst error 3.5)")
    state, result = execute.interpret(bad, limits)
    assert state == "failed" and result["error"].startswith(f"incorrect on {TARGET} (emulated)")
    good = sandbox.Outcome(0, stdout=line.replace("false", "true").replace("incorrect", "correct"))
    state, result = execute.interpret(good, limits)
    assert state == "done" and result["verdict"] == f"correct on {TARGET} (emulated)"
    assert result["median_s"] is None and result["error"] is None


def test_emulate_refuses_a_target_it_cannot_run(tmp_path):
    """`--emulate` of this machine's own ISA or of an unknown target: exit 2 with the reason,
    before registering."""
    from dojo_core.codegen.targets import detect_host_target
    own = detect_host_target().name
    for target, reason in ((own, "this machine's own ISA"), ("mips", "unknown target")):
        r = subprocess.run([sys.executable, "-m", "runners", "--server", "http://127.0.0.1:9",
                            "--token", "x", "--emulate", target, "--state-dir", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and reason in r.stderr, r.stderr

"""Agent runs end to end with real processes: ``python -m webapp.launch``
(daphne + the local runner + the agents worker it starts) over the embedded safefs broker
and SQLite, real gcc compiles of every measured state.

One embedded server for the module: a random-agent run from the API (steps appear in the history,
each with its finished job; the budget is respected exactly), a run stopped mid-way
(no job after the stop, state ``stopped``), the API's refusals, the dataset export
(HTTP and ``manage.py export_dataset``, format perfdojo-transitions) over what the runs measured.
And a greedy run over Redis (broker and channel layer) on a runner chosen by label.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid

import pytest

from live_server import REDIS_URL, ROOT, Server, redis_reachable

SIZES = {"N": 8, "M": 8, "K": 8}
FAST = {"min_time": 0.01, "threads": 1, "timeout_s": 60}

pytestmark = [pytest.mark.xdist_group("web_agents_e2e")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("agents"))
    s.wait_online("local")
    yield s
    s.stop()


def call(s, method, path, data=None, token=None):
    import urllib.error
    import urllib.request
    body = None if data is None else json.dumps(data).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Token {token}"} if token else {})}
    req = urllib.request.Request(s.url + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def new_session(s, kernel="matmul", sizes=SIZES):
    status, body = call(s, "POST", "/api/sessions", {"kernel": kernel, "sizes": sizes})
    assert status == 201, body
    return body["id"], body["owner_token"]


def wait_run(s, run_id, cond, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, run = call(s, "GET", f"/api/agents/{run_id}")
        assert status == 200, run
        if cond(run):
            return run
        time.sleep(0.3)
    raise AssertionError(f"agent run {run_id} timed out: {run}\n{s.logs()}")


def test_random_run_writes_measured_steps_into_the_history_within_budget(server):
    sid, token = new_session(server)
    status, body = call(server, "POST", f"/api/sessions/{sid}/agents",
                        {"agent": "random", "budget": 4, "seed": 3, "options": FAST}, token)
    assert status == 202, body
    run = wait_run(server, body["run"], lambda r: r["final"])
    assert run["state"] == "done", run
    assert run["measured"] == 4 and len(run["measurements"]) == 4
    assert run["measurements"][0]["step"] == 0 and run["measurements"][0]["depth"] == 0   # the baseline
    _, history = call(server, "GET", f"/api/sessions/{sid}")
    steps = {st["index"]: st for st in history["steps"]}
    jobs = [j for st in history["steps"] for j in st["results"]]
    assert len(jobs) == 4, jobs                                  # exactly the budget, no more
    for m in run["measurements"]:
        assert m["step"] in steps and m["job"] is not None
        job = next(j for j in steps[m["step"]]["results"] if j["id"] == m["job"])
        assert job["state"] == "done" and job["result"]["verified"] is True, job
        assert m["median_s"] == job["result"]["median_s"] > 0
    assert len(steps) > 1 and all(st["parent"] in steps for st in steps.values() if st["index"])
    best = run["best"]
    assert best["median_s"] == min(m["median_s"] for m in run["measurements"] if m["median_s"])
    assert history["current"] == best["step"]                   # the run ends at its best step


def test_stop_mid_run_ends_it_and_measures_nothing_more(server):
    sid, token = new_session(server)
    status, body = call(server, "POST", f"/api/sessions/{sid}/agents",
                        {"agent": "random", "budget": 60, "seed": 5, "options": FAST}, token)
    assert status == 202, body
    run_id = body["run"]
    wait_run(server, run_id, lambda r: r["measured"] >= 2)
    status, _ = call(server, "POST", f"/api/agents/{run_id}/stop")          # not the owner
    assert status == 403
    status, stopped = call(server, "POST", f"/api/agents/{run_id}/stop", {}, token)
    assert status == 200 and stopped["stop_requested"] is True
    run = wait_run(server, run_id, lambda r: r["final"], timeout=90)
    assert run["state"] == "stopped", run
    assert 2 <= run["measured"] < 60
    _, history = call(server, "GET", f"/api/sessions/{sid}")
    jobs = [j for st in history["steps"] for j in st["results"]]
    assert len(jobs) <= run["measured"] + 1                    # at most the one cancelled at the stop
    time.sleep(1.5)
    _, again = call(server, "GET", f"/api/sessions/{sid}")
    assert sum(len(st["results"]) for st in again["steps"]) == len(jobs)   # nothing after the stop
    status, same = call(server, "POST", f"/api/agents/{run_id}/stop", {}, token)
    assert status == 200 and same["state"] == "stopped"       # idempotent


def test_api_refusals_say_why(server):
    sid, token = new_session(server)
    path = f"/api/sessions/{sid}/agents"
    cases = [
        ({"agent": "nope", "budget": 3}, 400, "unknown agent 'nope'"),
        ({"agent": "random", "budget": 0}, 400, "budget must be between 1 and"),
        ({"agent": "random", "budget": "3"}, 400, "budget must be a whole number"),
        ({"agent": "random", "budget": 2.5}, 400, "budget must be a whole number"),
        ({"agent": "random"}, 400, "agent and budget are required"),
        ({"agent": "random", "budget": 3, "colour": 1}, 400, "unknown field(s): colour"),
        ({"agent": "random", "budget": 3, "step": 99}, 404, "has no step 99"),
        ({"agent": "random", "budget": 3, "runner": "no-such-box"}, 409, "no online runner matches 'no-such-box'"),
        ({"agent": "random", "budget": 3, "options": {"min_time": -1}}, 400, "min_time"),
    ]
    for data, code, reason in cases:
        status, body = call(server, "POST", path, data, token)
        assert status == code and reason in body["error"], (data, status, body)
    status, body = call(server, "POST", path, {"agent": "random", "budget": 3})
    assert status == 403 and "only the owner" in body["error"]
    assert call(server, "POST", "/api/sessions/nosuch/agents", {"agent": "random", "budget": 3}, token)[0] == 404
    assert call(server, "GET", "/api/agents/987654")[0] == 404
    status, body = call(server, "POST", path, {"agent": "random", "budget": 30, "options": FAST}, token)
    assert status == 202
    status, busy = call(server, "POST", path, {"agent": "random", "budget": 3}, token)
    assert status == 409 and "still" in busy["error"]
    call(server, "POST", f"/api/agents/{body['run']}/stop", {}, token)
    wait_run(server, body["run"], lambda r: r["final"], timeout=90)
    _, listing = call(server, "GET", "/api/agents")
    assert "random" in listing["agents"]


def test_dataset_export_has_every_measured_step(server):
    sid, token = new_session(server)
    status, body = call(server, "POST", f"/api/sessions/{sid}/agents",
                        {"agent": "random", "budget": 3, "seed": 11, "options": FAST}, token)
    assert status == 202
    run = wait_run(server, body["run"], lambda r: r["final"])
    import urllib.request
    with urllib.request.urlopen(server.url + "/api/dataset.jsonl", timeout=20) as r:
        assert r.headers["Content-Type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in r.read().decode().splitlines()]
    jobs = {m["job"]: m for m in run["measurements"]}
    mine = [x for x in lines if x["job"] in jobs]
    assert len(mine) == 3 and all(x["format"] == "perfdojo-transitions" for x in lines)
    for x in mine:
        assert x["runner"] == "local" and x["agent"] == "random" and "kernel matmul(N = 8" in x["state_ir"]
        assert x["median_s"] == jobs[x["job"]]["median_s"] and x["verified"] is True
    baseline = next(x for x in mine if x["action"] is None)
    assert baseline["job"] == run["measurements"][0]["job"] and baseline["steps_before"] == []
    out = server.tmp / "dataset.jsonl"
    proc = subprocess.run([sys.executable, "manage.py", "export_dataset", "--out", str(out)], cwd=ROOT,
                          env=server.env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert f"{len(exported)} records written to {out}" in proc.stderr
    assert exported == lines                       # nothing ran in between: the same records


@pytest.mark.skipif(not redis_reachable(), reason=f"Redis is not reachable at {REDIS_URL}")
def test_run_over_redis_reaches_the_session_group(tmp_path):
    """REDIS_URL: Redis is the broker (the agents queue, here a queue of its own) and the
    channel layer; the run's agent.update messages reach the session's group in Redis."""
    import redis
    from channels_redis.core import RedisChannelLayer
    prefix = "pdagents" + uuid.uuid4().hex[:8]
    s = Server(tmp_path, local_runner=False, env={"REDIS_URL": REDIS_URL, "DOJO_CHANNEL_PREFIX": prefix,
                                                  "DOJO_AGENTS_QUEUE": f"agents-{prefix}"})
    try:
        name = "ra-" + prefix[-6:]
        s.start_runner(name, "agentbox", s.token())
        s.wait_online(name)
        sid, token = new_session(s)

        async def scenario():
            layer = RedisChannelLayer(hosts=[REDIS_URL], prefix=prefix)
            channel = await layer.new_channel()
            await layer.group_add(f"session-{sid}", channel)
            status, body = await asyncio.to_thread(call, s, "POST", f"/api/sessions/{sid}/agents", {
                "agent": "greedy", "budget": 3, "runner": "agentbox", "options": FAST}, token)
            assert status == 202, body
            updates, deadline = 0, time.monotonic() + 150
            while True:
                left = deadline - time.monotonic()
                assert left > 0, s.logs()
                try:                    # short waits: a long blocking read times out in redis-py
                    msg = await asyncio.wait_for(layer.receive(channel), timeout=min(left, 3))
                except (asyncio.TimeoutError, redis.exceptions.TimeoutError):
                    _, run = await asyncio.to_thread(call, s, "GET", f"/api/agents/{body['run']}")
                    if run["final"]:
                        break
                    continue
                if msg["type"] == "agent.update" and msg["run"] == body["run"]:
                    updates += 1
                    _, run = await asyncio.to_thread(call, s, "GET", f"/api/agents/{body['run']}")
                    if run["final"]:
                        break
            await layer.flush()
            return run, updates

        run, updates = asyncio.run(scenario())
        assert run["state"] == "done" and run["measured"] == 3, run
        assert updates >= 3
        _, history = call(s, "GET", f"/api/sessions/{sid}")
        jobs = [j for st in history["steps"] for j in st["results"]]
        assert len(jobs) == 3 and {j["runner"] for j in jobs} == {name}
    finally:
        s.stop()

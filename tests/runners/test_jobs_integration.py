"""End to end: a real server (``python -m webapp.launch``: daphne, the reaper) and real
runner daemons (``python -m runners``: heartbeat process, Celery worker, sandbox) as
subprocesses, over the embedded safefs broker with SQLite, and over Redis (with
PostgreSQL where it is reachable).  Timings are shortened through the environment:
heartbeat 0.4 s, offline after 3 s, reaper every 0.3 s.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

import pgsupport

from live_server import FAST, LONG, REDIS_URL, ROOT, SMALL, Server, http, redis_reachable


@pytest.fixture
def embedded(tmp_path):
    server = Server(tmp_path)
    yield server
    server.stop()


def test_embedded_make_run_benchmarks_with_its_local_runner(embedded):
    """`make run` with no configuration: daphne + a local runner over the safefs broker."""
    s = embedded
    s.wait_online("local")
    # the server's own limits answer in JSON, even for a header twisted would drop
    status, answer = http("GET", s.url + "/api/runners", token="x" * 100_000)
    assert status == 431 and "header" in answer["error"], answer
    assert http("GET", s.url + "/api/runners", token="x" * 20_000)[0] == 431
    local = s.runner("local")
    assert local["hardware"]["cpu"]["arch"] and "local" in local["labels"]
    assert local["sandbox"]["network"]
    steps = ["split i by 4", "split j by 8"]
    it1, owner = s.history("matmul", SMALL, steps)
    good = s.submit(kernel="matmul", sizes=SMALL, steps=steps, options=FAST, session_id=it1,
                    step_index=2, token=owner)
    slow = s.submit(kernel="matmul", sizes=LONG, options={"min_time": 60, "timeout_s": 2, "threads": 1})
    job = s.wait_job(good, ("done", "failed", "lost"))
    assert job["state"] == "done", job
    res = job["result"]
    assert res["verified"] is True and res["median_s"] > 0 and res["gflops"] > 0
    assert res["runner"] == "local" and res["hardware"]["cpu"]["arch"] and res["compiler"]
    assert res["sandbox"]["network"] == local["sandbox"]["network"]
    assert job["runner"] == "local" and job["attempts"] == 1 and job["session_id"] == it1
    job = s.wait_job(slow, ("done", "failed", "lost"))
    assert job["state"] == "failed" and "timed out after" in job["error"], job
    assert s.runner("local")["status"] == "idle"

    s.proc.send_signal(signal.SIGTERM)                   # the launcher stops runner and server
    assert s.proc.wait(timeout=40) is not None
    assert s.runners == {}


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request):
    """{} (SQLite in the state directory) or {"DATABASE_URL": a fresh PostgreSQL database}."""
    if request.param == "sqlite":
        yield {}
        return
    if not pgsupport.reachable():
        pytest.skip(pgsupport.SKIP_REASON)
    db_url, drop = pgsupport.new_database("perfdojo_it_")
    yield {"DATABASE_URL": db_url}
    drop()


def test_kill_a_runner_mid_job_then_another_finishes_it(tmp_path, database):
    """kill -9 of a whole runner (daemon + worker + sandbox) while it benchmarks: the reaper
    requeues the job, the other runner completes it, the result is recorded once; on SQLite
    and on PostgreSQL (where the reaper's row locks must avoid outer joins)."""
    s = Server(tmp_path, local_runner=False, env=database)
    try:
        token = s.token(uses=2)
        s.start_runner("ra", "pool", token)
        s.start_runner("rb", "pool", token)
        s.wait_online("ra", "rb")
        job_id = s.submit(kernel="matmul", sizes=LONG, runner="pool",
                          options={"min_time": 2.5, "threads": 1, "timeout_s": 60})
        job = s.wait_job(job_id, ("running",), timeout=30)
        victim, survivor = job["runner"], ({"ra", "rb"} - {job["runner"]}).pop()
        time.sleep(1.0)                                   # well inside the benchmark
        os.killpg(s.runners[victim].pid, signal.SIGKILL)
        s.runners[victim].wait()
        job = s.wait_job(job_id, ("done", "failed", "lost"), timeout=60)
        assert job["state"] == "done", job
        assert job["runner"] == survivor and job["attempts"] == 2
        assert job["result"]["verified"] is True and job["result"]["attempt"] == 2
        events = [e["event"] for e in _events(s, job_id)]
        assert events.count("done") == 1 and events.count("requeued") == 1, events
        assert not s.runner(victim)["online"]
    finally:
        s.stop()


def _events(s: Server, job_id: int) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         f"from webapp.runners.models import Job; import json; "
         f"print(json.dumps(Job.objects.get(id={job_id}).events))"],
        cwd=ROOT, env=s.env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_worker_crash_is_handed_back_and_sigterm_hands_back_the_job(tmp_path, database):
    """kill -9 of the Celery worker alone: the daemon hands the job back and restarts the
    worker, which redoes it. SIGTERM with a short grace: the job is handed back, and a
    runner that joins later takes it."""
    s = Server(tmp_path, local_runner=False, env=database)
    try:
        token = s.token(uses=2)
        s.start_runner("solo", "x", token, grace=1)
        s.wait_online("solo")
        slow = {"min_time": 1.5, "threads": 1, "timeout_s": 60}
        first = s.submit(kernel="matmul", sizes=LONG, runner="x", options=slow)
        s.wait_job(first, ("running",), timeout=30)
        current = tmp_path / "runner-solo" / "current.json"
        s.wait(lambda: current.exists() and json.loads(current.read_text()).get("pgid"), 10, "the sandbox")
        os.kill(json.loads(current.read_text())["worker_pid"], signal.SIGKILL)
        job = s.wait_job(first, ("done", "failed", "lost"), timeout=60)
        assert job["state"] == "done" and job["runner"] == "solo" and job["attempts"] == 2, job
        reasons = [e.get("reason", "") for e in _events(s, first) if e["event"] == "requeued"]
        assert len(reasons) == 1 and "worker died" in reasons[0], reasons

        second = s.submit(kernel="matmul", sizes=LONG, runner="x", options={**slow, "min_time": 30})
        s.wait_job(second, ("running",), timeout=30)
        s.runners["solo"].terminate()
        assert s.runners["solo"].wait(timeout=30) == 0
        job = s.job(second)
        assert job["state"] == "queued" and job["runner"] is None and job["attempts"] == 1, job
        events = _events(s, second)
        assert [e["event"] for e in events] == ["queued", "running", "requeued"], events
        assert "runner solo stopped" in events[-1]["reason"]
        assert not s.runner("solo")["online"]               # it said goodbye
        s.start_runner("solo2", "x", token)
        job = s.wait_job(second, ("running",), timeout=30)
        assert job["runner"] == "solo2"
        assert s.post(f"/api/jobs/{second}/cancel", {})[1]["state"] == "cancelled"
        s.wait(lambda: s.runner("solo2")["status"] == "idle", 15, "the cancelled job to stop")
    finally:
        s.stop()


def _postgres_database():
    """(DATABASE_URL, drop) for a fresh database on the local PostgreSQL, or (None, None)."""
    if not pgsupport.reachable():
        return None, None
    return pgsupport.new_database("perfdojo_it_")


@pytest.mark.skipif(not redis_reachable(), reason=f"Redis is not reachable at {REDIS_URL} "
                    "(.ci/run starts redis-server; set DOJO_TEST_REDIS_URL to use another)")
def test_redis_broker_two_runners_with_labels_and_live_updates(tmp_path):
    """REDIS_URL (+ DATABASE_URL on PostgreSQL where reachable): Redis is the broker and the
    channel layer; each job goes to the runner its label names; updates reach Redis groups."""
    db_url, drop = _postgres_database()
    prefix = "pdtest" + uuid.uuid4().hex[:8]
    env = {"REDIS_URL": REDIS_URL, "DOJO_CHANNEL_PREFIX": prefix}
    if db_url:
        env["DATABASE_URL"] = db_url
    s = Server(tmp_path, env=env)
    try:
        s.start_runner("rb-" + prefix[-4:], "bee", s.token())
        other = "rb-" + prefix[-4:]
        s.wait_online("local", other)
        assert s.runner(other)["queue"] == f"runner-{other}"
        from channels_redis.core import RedisChannelLayer
        session, owner = s.history("matmul", SMALL)

        async def scenario():
            layer = RedisChannelLayer(hosts=[REDIS_URL], prefix=prefix)
            channel = await layer.new_channel()
            await layer.group_add(f"session-{session}", channel)
            ids = await asyncio.to_thread(lambda: [
                s.submit(kernel="matmul", sizes=SMALL, runner="local", options=FAST, session_id=session,
                         step_index=0, token=owner),
                s.submit(kernel="matmul", sizes=SMALL, runner="bee", options=FAST, session_id=session,
                         step_index=0, token=owner)])
            seen = {}
            deadline = time.monotonic() + 60
            while not all(seen.get(i) in ("done", "failed", "lost") for i in ids):
                left = deadline - time.monotonic()
                assert left > 0, f"updates seen: {seen}\n{s.logs()}"
                msg = await asyncio.wait_for(layer.receive(channel), timeout=left)
                assert msg["type"] == "job.update"
                seen[msg["job"]["id"]] = msg["job"]["state"]
            await layer.flush()
            return ids, seen

        ids, seen = asyncio.run(scenario())
        assert set(seen.values()) == {"done"}, (seen, s.logs())
        a, b = (s.job(i) for i in ids)
        assert a["runner"] == "local" and b["runner"] == other
        assert a["result"]["verified"] and b["result"]["verified"]
        assert b["result"]["timing"]["claimed"] is not None        # ran long enough: claimed first

        # a job that ends at once is claimed by its result (the claim came in the message)
        dry = s.job(s.submit(kernel="relu", runner="bee", options={"dry_run": True}))
        dry = s.wait_job(dry["id"], ("done", "failed", "lost"))
        assert dry["state"] == "done" and dry["attempts"] == 1, dry
        assert dry["result"]["timing"]["claimed"] is None and dry["result"]["timing"]["received"]

        # a message someone else put on the runner's queue is refused: nothing runs
        from runners.celery_app import make_app, send_job
        forged = {"job": {"id": b["id"], "source": "kernel k(N = 4)", "steps": [], "sizes": {},
                          "options": {"min_time": 30}}, "attempt": 2, "runner": other}
        send_job(make_app(REDIS_URL), b["id"], f"runner-{other}", forged, "0" * 64)
        log = tmp_path / f"runner-{other}.log"
        s.wait(lambda: "message refused" in log.read_text(errors="replace"), 30, "the refusal")
        assert s.job(b["id"])["attempts"] == 1 and s.runner(other)["status"] == "idle"
    finally:
        s.stop()
        if drop:
            drop()

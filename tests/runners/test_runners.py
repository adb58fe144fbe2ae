"""Runner registry, job state machine, runner protocol over HTTP, reaper.

Real models and views on the test database; the broker is kombu's in-memory
transport so that nothing is written to the state directory.
"""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.management import call_command
from django.utils import timezone

from dojo_core import kernels
from webapp.runners import dispatch, protocol, services
from webapp.runners.models import Job, RegistrationToken, Runner
from webapp.runners.reaper import reap_once
from webapp.refusal import Refusal
from webapp.runners.services import NoRunner

MATMUL = kernels.kernel_path("matmul").read_text()
SMALL = {"N": 32, "M": 32, "K": 32}


@pytest.fixture(autouse=True)
def broker_and_offline_after(memory_broker, settings):
    settings.DOJO_RUNNER_OFFLINE_AFTER = 15


def make_runner(name="r1", labels=(), hw=None):
    _, raw = RegistrationToken.issue(note="test", uses=1)
    answer = protocol.register(raw, name, list(labels), hw or {"cpu": {"arch": "x86_64"}},
                               {"network": "isolated (test)"})
    return Runner.objects.get(name=name), answer["secret"]


def auth(secret):
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def post(client, url, data=None, secret=None, raw=None):
    body = raw if raw is not None else json.dumps(data or {})
    return client.post(url, body, content_type="application/json", **(auth(secret) if secret else {}))


def age(runner, seconds):
    Runner.objects.filter(id=runner.id).update(last_heartbeat=timezone.now() - timedelta(seconds=seconds))


# ----------------------------------------------------------------------------- state machine

@pytest.mark.django_db
def test_job_state_machine_happy_path_and_refusals():
    runner, _ = make_runner("r1")
    job = services.submit_benchmark(MATMUL, [], SMALL)
    assert job.state == Job.QUEUED and job.runner == runner and job.attempts == 0
    assert job.kernel == "matmul" and job.work["flops"] == 2 * 32 ** 3

    claim = protocol.claim(runner, job.id)
    assert claim["attempt"] == 1 and claim["job"]["source"] == job.source
    assert claim["job"]["sizes"] == SMALL
    job.refresh_from_db()
    assert job.state == Job.RUNNING and job.attempts == 1 and job.started is not None

    answer = protocol.report(runner, job.id, 1, "done", {"median_s": 1e-3, "verified": True})
    assert answer["status"] == "stored"
    job.refresh_from_db()
    assert job.state == Job.DONE and job.finished is not None
    assert job.result["gflops"] == pytest.approx(2 * 32 ** 3 / 1e-3 / 1e9)
    assert job.result["runner"] == "r1" and job.result["hardware"] == runner.hardware

    # final states stay final
    with pytest.raises(Refusal) as exc:
        protocol.claim(runner, job.id)
    assert exc.value.status == 409
    assert services.cancel(job).state == Job.DONE
    with pytest.raises(Refusal) as exc:
        protocol.report(runner, job.id, 2, "failed", {"error": "late"})
    assert exc.value.status == 409


@pytest.mark.django_db
def test_cancel_queued_and_running():
    runner, _ = make_runner("r1")
    queued = services.submit_benchmark(MATMUL, [], SMALL)
    assert services.cancel(queued).state == Job.CANCELLED
    with pytest.raises(Refusal):
        protocol.claim(runner, queued.id)

    running = services.submit_benchmark(MATMUL, [], SMALL)
    protocol.claim(runner, running.id)
    assert protocol.heartbeat(runner, running.id)["cancel"] == []
    services.cancel(running)
    assert protocol.heartbeat(runner, running.id)["cancel"] == [running.id]   # the runner kills it
    ans = protocol.report(runner, running.id, 1, "cancelled", {"error": "cancelled"})
    assert ans["status"] == "ignored"
    running.refresh_from_db()
    assert running.state == Job.CANCELLED


@pytest.mark.django_db
def test_a_late_heartbeat_never_leaves_the_runner_busy_after_the_result():
    """The result is stored while the heartbeat that still names the job is being written:
    the runner ends idle, not busy until its next beat."""
    from django.db import connection
    runner, _ = make_runner("r1")
    job = services.submit_benchmark(MATMUL, [], SMALL)
    protocol.claim(runner, job.id)
    protocol.report(runner, job.id, 1, "done", {"median_s": 1.0, "verified": True})
    runner.refresh_from_db()
    assert runner.status == "idle"
    protocol.heartbeat(runner, job.id)                   # a beat sent before the result
    runner.refresh_from_db()
    assert runner.status == "idle"

    job = services.submit_benchmark(MATMUL, [], SMALL)
    protocol.claim(runner, job.id)
    stored = []

    def result_lands_first(execute, sql, params, many, context):
        if not stored and sql.startswith("UPDATE") and "runners_runner" in sql:
            stored.append("reporting")
            stored.append(protocol.report(runner, job.id, 1, "done", {"median_s": 1.0, "verified": True}))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(result_lands_first):
        protocol.heartbeat(runner, job.id)
    assert stored[1]["status"] == "stored"
    runner.refresh_from_db()
    assert runner.status == "idle"


@pytest.mark.django_db
def test_unverified_result_is_failed():
    runner, _ = make_runner("r1")
    job = services.submit_benchmark(MATMUL, [], SMALL)
    protocol.claim(runner, job.id)
    protocol.report(runner, job.id, 1, "done", {"median_s": 1.0, "verified": False})
    job.refresh_from_db()
    assert job.state == Job.FAILED and "differ" in job.result["error"]


@pytest.mark.django_db
def test_submit_validates_with_dojo_core():
    make_runner("r1")
    with pytest.raises(ValueError, match=r"<source>:\d+:\d+:"):
        services.submit_benchmark("kernel k(N = 4)\nout C: f32[N]\nfor i in 0..N:\n  C[i + 1] = 0\n")
    with pytest.raises(ValueError, match="step 'split q by 2'"):
        services.submit_benchmark(MATMUL, ["split q by 2"], SMALL)
    with pytest.raises(ValueError, match="unknown size 'Z'"):
        services.submit_benchmark(MATMUL, [], {"Z": 3})
    with pytest.raises(ValueError, match="positive integer"):
        services.submit_benchmark(MATMUL, [], {"N": 0})
    with pytest.raises(ValueError, match="options.min_time"):
        services.submit_benchmark(MATMUL, [], SMALL, options={"min_time": -1})
    with pytest.raises(ValueError, match="empty"):
        services.submit_benchmark("   ")
    job = services.submit_benchmark(MATMUL + "\n\n", ["split i by 2", "  split j   by 4 "], SMALL,
                                    session_id="abc", step_index=2)
    assert job.steps == ["split i by 2", "split j by 4"]
    assert job.session_id == "abc" and job.step_index == 2
    from dojo_core.parser import parse
    from dojo_core.printer import print_program
    assert job.source == print_program(parse(MATMUL))             # the canonical text


@pytest.mark.django_db
def test_runner_choice_by_name_and_label():
    with pytest.raises(NoRunner, match="no runner is online"):
        services.submit_benchmark(MATMUL, [], SMALL)
    a, _ = make_runner("a", ["fast"])
    b, _ = make_runner("b", ["slow"])
    assert services.submit_benchmark(MATMUL, [], SMALL, runner="slow").runner == b
    assert services.submit_benchmark(MATMUL, [], SMALL, runner="a").runner == a
    assert set(a.labels) >= {"fast", "cpu", "x86_64"}
    with pytest.raises(NoRunner, match="'gpu'.*online: a, b"):
        services.submit_benchmark(MATMUL, [], SMALL, runner="gpu")
    age(b, 3600)
    with pytest.raises(NoRunner):
        services.submit_benchmark(MATMUL, [], SMALL, runner="slow")
    # any runner: the least loaded
    first = services.submit_benchmark(MATMUL, [], SMALL)
    assert first.runner == a


@pytest.mark.django_db
def test_offline_detection(settings):
    settings.DOJO_RUNNER_OFFLINE_AFTER = 5
    runner, secret = make_runner("r1")
    assert runner.online and runner.status == "idle"
    age(runner, 6)
    runner.refresh_from_db()
    assert not runner.online and runner.status == "offline"
    protocol.heartbeat(runner)
    runner.refresh_from_db()
    assert runner.online
    Runner.objects.filter(id=runner.id).update(enabled=False)
    runner.refresh_from_db()
    assert runner.status == "disabled" and not runner.online


# ----------------------------------------------------------------------------- registration

@pytest.mark.django_db
def test_registration_tokens(client):
    _, once = RegistrationToken.issue(uses=1)
    body = {"token": once, "name": "r1", "labels": ["x"], "hardware": {"cpu": {}}}
    r = post(client, "/api/runners/register", body)
    assert r.status_code == 201, r.content
    data = r.json()
    assert data["name"] == "r1" and data["queue"] == "runner-r1" and data["secret"].startswith("pds_")
    assert data["broker_url"] == "memory://"
    r = post(client, "/api/runners/register", body)
    assert r.status_code == 403 and "used up" in r.json()["error"]
    assert post(client, "/api/runners/register", {**body, "token": "pdt_nope"}).status_code == 403
    tok, revoked = RegistrationToken.issue(uses=None)
    tok.revoked = True
    tok.save()
    r = post(client, "/api/runners/register", {**body, "token": revoked})
    assert r.status_code == 403 and "revoked" in r.json()["error"]
    _, expired = RegistrationToken.issue(uses=None, expires_in=timedelta(seconds=-1))
    assert "expired" in post(client, "/api/runners/register", {**body, "token": expired}).json()["error"]
    _, many = RegistrationToken.issue(uses=None)
    r = post(client, "/api/runners/register", {**body, "token": many, "name": "bad name!"})
    assert r.status_code == 400
    r = post(client, "/api/runners/register", {**body, "token": many, "labels": "x"})
    assert r.status_code == 400
    # the same name again needs the runner's secret; it rotates it: the old one is refused
    r = post(client, "/api/runners/register", {**body, "token": many})
    assert r.status_code == 403 and "taken" in r.json()["error"]
    r2 = post(client, "/api/runners/register", {**body, "token": many, "secret": data["secret"]})
    assert r2.status_code == 201
    assert post(client, "/api/runners/heartbeat", {}, secret=data["secret"]).status_code == 403
    assert post(client, "/api/runners/heartbeat", {}, secret=r2.json()["secret"]).status_code == 200
    Runner.objects.filter(name="r1").update(enabled=False)
    assert post(client, "/api/runners/heartbeat", {}, secret=r2.json()["secret"]).status_code == 403


@pytest.mark.django_db
def test_make_runner_token_command(capsys):
    call_command("make_runner_token", "--uses", "2", "--note", "lab")
    raw = capsys.readouterr().out.strip()
    assert raw.startswith("pdt_")
    tok = RegistrationToken.objects.get()
    assert tok.uses_left == 2 and tok.note == "lab" and raw not in tok.token_hash
    protocol.register(raw, "x1", [], {}, {})
    protocol.register(raw, "x2", [], {}, {})
    with pytest.raises(Refusal):
        protocol.register(raw, "x3", [], {}, {})


# ----------------------------------------------------------------------------- HTTP API

@pytest.mark.django_db
def test_api_auth_and_bad_input(client):
    runner, secret = make_runner("r1")
    other, other_secret = make_runner("r2")
    job = services.submit_benchmark(MATMUL, [], SMALL, runner="r1")

    assert post(client, "/api/runners/heartbeat", {}).status_code == 401
    assert post(client, "/api/runners/heartbeat", {}, secret="pds_wrong").status_code == 403
    r = client.post("/api/runners/heartbeat", "{}", content_type="application/json",
                    HTTP_AUTHORIZATION="Basic abc")
    assert r.status_code == 401
    assert post(client, f"/api/runners/jobs/{job.id}/claim", secret="wrong").status_code == 403
    assert post(client, "/api/runners/jobs/999999/claim", secret=secret).status_code == 404
    assert post(client, "/api/runners/jobs/99999999999999999999/claim", secret=secret).status_code == 404
    assert post(client, f"/api/runners/jobs/{job.id}/claim", secret=other_secret).status_code == 409
    r = post(client, "/api/runners/heartbeat", raw="{not json", secret=secret)
    assert r.status_code == 400 and "bad JSON" in r.json()["error"]
    assert post(client, "/api/runners/heartbeat", raw="[1, 2]", secret=secret).status_code == 400
    assert post(client, "/api/runners/heartbeat", {"current_job": "x"}, secret=secret).status_code == 400
    assert client.get("/api/runners/heartbeat").status_code == 405
    assert client.get("/api/jobs/424242").status_code == 404
    assert client.get("/api/jobs/424242").json() == {"error": "no job 424242"}

    r = post(client, f"/api/runners/jobs/{job.id}/claim", secret=secret)
    assert r.status_code == 200 and r.json()["attempt"] == 1
    result = {"attempt": 1, "state": "done", "result": {"median_s": 0.5, "verified": True}}
    assert post(client, f"/api/runners/jobs/{job.id}/result", result, secret=other_secret).status_code == 403
    assert post(client, f"/api/runners/jobs/{job.id}/result", {**result, "state": "great"},
                secret=secret).status_code == 400
    assert post(client, f"/api/runners/jobs/{job.id}/result", {**result, "attempt": "1"},
                secret=secret).status_code == 400
    assert post(client, f"/api/runners/jobs/{job.id}/result", {**result, "result": [1]},
                secret=secret).status_code == 400
    assert post(client, f"/api/runners/jobs/{job.id}/result", {**result, "attempt": 7},
                secret=secret).status_code == 409

    # idempotent: the same result twice is stored once
    r1 = post(client, f"/api/runners/jobs/{job.id}/result", result, secret=secret)
    assert r1.status_code == 200 and r1.json()["status"] == "stored"
    r2 = post(client, f"/api/runners/jobs/{job.id}/result", result, secret=secret)
    assert r2.status_code == 200 and r2.json()["status"] == "duplicate"
    job.refresh_from_db()
    assert [e["event"] for e in job.events].count("done") == 1
    assert job.result["median_s"] == 0.5


@pytest.mark.django_db
def test_public_api_runners_and_jobs(client):
    runner, _ = make_runner("r1", ["lab"])
    r = client.get("/api/runners")
    assert r.status_code == 200
    [entry] = r.json()["runners"]
    assert entry["name"] == "r1" and entry["online"] and entry["status"] == "idle"
    assert entry["hardware"] == {"cpu": {"arch": "x86_64"}} and "lab" in entry["labels"]
    assert entry["sandbox"] == {"network": "isolated (test)"} and entry["queue_depth"] == 0

    made = post(client, "/api/sessions", {"kernel": "matmul", "sizes": SMALL}).json()
    owner = {"HTTP_AUTHORIZATION": f"Token {made['owner_token']}"}
    assert post(client, "/api/jobs", {"kernel": "matmul"}).status_code == 401
    r = client.post("/api/jobs", json.dumps({"kernel": "matmul", "sizes": SMALL, "runner": "lab",
                                             "session_id": made["id"], "step_index": 0}),
                    content_type="application/json", **owner)
    assert r.status_code == 201, r.content
    job_id = r.json()["job"]
    d = client.get(f"/api/jobs/{job_id}/").json()
    for key in ("id", "state", "kernel", "sizes", "steps", "runner", "requested_runner", "attempts",
                "max_attempts", "created", "started", "finished", "heartbeat", "result", "error",
                "session_id", "step_index"):
        assert key in d
    assert d["state"] == "queued" and d["runner"] == "r1" and d["session_id"] == made["id"]
    assert client.get("/api/runners").json()["runners"][0]["queue_depth"] == 1

    def submit(data=None, raw=None):
        return client.post("/api/jobs", raw if raw is not None else json.dumps(data),
                           content_type="application/json", **owner)
    assert submit({"kernel": "nope"}).status_code == 400
    assert submit({"source": MATMUL, "steps": ["fuse x y"]}).status_code == 400
    assert submit({"source": MATMUL, "color": 1}).status_code == 400
    assert submit({"source": MATMUL, "runner": "gpu"}).status_code == 409
    assert submit(raw="nope").status_code == 400
    assert post(client, f"/api/jobs/{job_id}/cancel").status_code == 401
    r = client.post(f"/api/jobs/{job_id}/cancel", "{}", content_type="application/json", **owner)
    assert r.status_code == 200 and r.json()["state"] == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_state_changes_are_pushed_to_channel_groups():
    runner, _ = make_runner("r1")
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)("session-s42", channel)
    job = services.submit_benchmark(MATMUL, [], SMALL, session_id="s42", step_index=3)
    protocol.claim(runner, job.id)
    protocol.report(runner, job.id, 1, "done", {"median_s": 0.1, "verified": True})
    states = []
    for _ in range(3):
        msg = async_to_sync(layer.receive)(channel)
        assert msg["type"] == "job.update" and msg["job"]["id"] == job.id
        states.append(msg["job"]["state"])
    assert states == ["queued", "running", "done"]
    assert msg["job"]["step_index"] == 3 and msg["job"]["result"]["median_s"] == 0.1


# ----------------------------------------------------------------------------- reaper

@pytest.mark.django_db
def test_reaper_requeues_a_dead_runners_job_then_gives_up(settings):
    settings.DOJO_RUNNER_OFFLINE_AFTER = 5
    a, _ = make_runner("a", ["pool"])
    b, _ = make_runner("b", ["pool"])
    job = services.submit_benchmark(MATMUL, [], SMALL, runner="pool", max_attempts=2)
    first = job.runner
    second = b if first == a else a
    protocol.claim(first, job.id)
    assert reap_once()["requeued"] == 0                  # alive: nothing to do
    age(first, 60)                                       # the runner died
    assert reap_once()["requeued"] == 1
    job.refresh_from_db()
    assert job.state == Job.QUEUED and job.runner == second and job.attempts == 1
    assert job.events[-1]["event"] == "requeued" and "stopped heartbeating" in job.events[-1]["reason"]
    # the dead runner's late result is refused: it no longer owns the job
    with pytest.raises(Refusal) as exc:
        protocol.report(first, job.id, 1, "done", {"median_s": 1})
    assert exc.value.status == 403

    protocol.claim(second, job.id)
    age(second, 60)                                      # the second runner dies too
    counts = reap_once()
    job.refresh_from_db()
    assert counts["lost"] == 1 and job.state == Job.LOST and job.attempts == 2
    assert "after 2 attempts" in job.result["error"] and job.finished is not None


@pytest.mark.django_db
def test_reaper_assigns_waiting_jobs_and_catches_unreported_ones(settings):
    settings.DOJO_RUNNER_OFFLINE_AFTER = 5
    a, _ = make_runner("a", ["pool"])
    job = services.submit_benchmark(MATMUL, [], SMALL, runner="pool")
    age(a, 60)
    reap_once()
    job.refresh_from_db()
    assert job.state == Job.QUEUED and job.runner is None        # waits for a runner
    b, _ = make_runner("b", ["pool"])
    reap_once()
    job.refresh_from_db()
    assert job.runner == b
    # alive runner that stops naming the job in its heartbeats (its worker lost it)
    protocol.claim(b, job.id)
    Job.objects.filter(id=job.id).update(heartbeat=timezone.now() - timedelta(seconds=60))
    reap_once()
    job.refresh_from_db()
    assert job.state == Job.QUEUED and job.runner == b and "no longer reports" in job.events[-1]["reason"]


@pytest.mark.django_db
def test_reaper_republishes_jobs_never_sent(settings, django_capture_on_commit_callbacks):
    """A publish that fails (here a real Redis client against a closed port) clears the
    job's ``dispatched``, and the reaper sends the job again."""
    runner, _ = make_runner("r1")
    settings.DOJO_BROKER_URL = "redis://127.0.0.1:1/0"
    dispatch.reset()
    with django_capture_on_commit_callbacks(execute=True):
        job = services.submit_benchmark(MATMUL, [], SMALL)
    job.refresh_from_db()
    assert job.state == Job.QUEUED and job.dispatched is None
    Job.objects.filter(id=job.id).update(created=timezone.now() - timedelta(seconds=10))
    settings.DOJO_BROKER_URL = "memory://"
    dispatch.reset()
    with django_capture_on_commit_callbacks(execute=True):
        assert reap_once()["redispatched"] == 1
    job.refresh_from_db()
    assert job.events[-1]["event"] == "redispatched" and job.dispatched is not None
    assert reap_once()["redispatched"] == 0              # published now: not sent again


@pytest.mark.django_db
def test_release_goodbye_and_reregistration_requeue():
    a, a_secret = make_runner("a", ["pool"])
    b, _ = make_runner("b", ["pool"])
    job = services.submit_benchmark(MATMUL, [], SMALL, runner="a")
    protocol.claim(a, job.id)
    assert protocol.release(a, job.id, "worker died")["status"] == "requeued"
    job.refresh_from_db()
    assert job.state == Job.QUEUED and job.runner == a and job.attempts == 1   # same name requested
    protocol.claim(a, job.id)
    protocol.goodbye(a)
    a.refresh_from_db()
    job.refresh_from_db()
    assert not a.online and job.state == Job.QUEUED and job.runner is None and job.attempts == 2
    protocol.heartbeat(a)                                # back again
    job2 = services.submit_benchmark(MATMUL, [], SMALL, runner="a")
    protocol.claim(a, job2.id)
    _, raw = RegistrationToken.issue()
    protocol.register(raw, "a", ["pool"], {}, {}, a_secret)   # a restart: a new incarnation
    job2.refresh_from_db()
    assert job2.state == Job.QUEUED and job2.attempts == 1 and "restarted" in job2.events[-1]["reason"]


@pytest.mark.django_db
def test_reap_jobs_command(capsys):
    call_command("reap_jobs")
    assert json.loads(capsys.readouterr().out)["requeued"] == 0


def test_admin_registers_the_runner_models():
    from django.contrib import admin
    assert {Runner, RegistrationToken, Job} <= set(admin.site._registry)


@pytest.mark.django_db
def test_admin_token_creation_shows_the_token_once(admin_client):
    r = admin_client.post("/admin/runners/registrationtoken/add/",
                          {"note": "lab", "uses_left": "2", "expires_at_0": "", "expires_at_1": ""},
                          follow=True)
    assert r.status_code == 200
    text = r.content.decode()
    assert "Registration token (shown only now): pdt_" in text
    raw = text.split("Registration token (shown only now): ")[1][:36].split("<")[0].strip()
    tok = RegistrationToken.objects.get(note="lab")
    assert tok.uses_left == 2 and protocol.register(raw, "adm", [], {}, {})["name"] == "adm"


@pytest.mark.django_db
def test_an_idle_runner_takes_work_queued_behind_a_busy_one():
    a, _ = make_runner("a", ["pool"])
    jobs = [services.submit_benchmark(MATMUL, [], SMALL, runner="pool") for _ in range(3)]
    named = services.submit_benchmark(MATMUL, [], SMALL, runner="a")
    protocol.claim(a, jobs[0].id)                                   # a is busy with the first
    b, _ = make_runner("b", ["pool"])                               # joins later, idle
    assert reap_once()["rebalanced"] == 1
    moved = [j.id for j in Job.objects.filter(runner=b)]
    assert moved == [jobs[1].id]                                    # the oldest waiting one
    event = Job.objects.get(id=jobs[1].id).events[-1]
    assert event["event"] == "reassigned" and "idle" in event["reason"]
    assert reap_once()["rebalanced"] == 0                           # b has work now
    assert Job.objects.get(id=named.id).runner == a                 # a job naming a stays

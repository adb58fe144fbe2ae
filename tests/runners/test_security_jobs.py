"""Attacks on jobs, results and runners, one test each: every one must fail.

Real models, views and services on the test database (SQLite here; PostgreSQL through
tests/runners/test_runners_postgres.py); the broker is kombu's in-memory transport.
"""
from __future__ import annotations

import json

import pytest
from django.test import Client

from dojo_core import kernels
from webapp.leaderboards import queries
from webapp.refusal import Refusal
from webapp.runners import protocol
from webapp.runners.models import Job, RegistrationToken, Runner

SMALL = {"N": 16, "M": 16}
FAKE_ADD = ("kernel add(N = 4096, M = 4096)\nin A: f32[N, M]\nin B: f32[N, M]\nout C: f32[N, M]\n\n"
            "for i in 0..1:\n  for j in 0..1:\n    C[i, j] = A[i, j]\n")

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def broker_and_bootstrap_token(memory_broker, settings):
    settings.DOJO_RUNNER_BOOTSTRAP_TOKEN = "pdt_shared-bootstrap"


def register(name, token=None, secret=None):
    if token is None:
        _, token = RegistrationToken.issue(note="test", uses=1)
    return protocol.register(token, name, [], {"cpu": {"arch": "x86_64", "model": "T"}}, {}, secret)


@pytest.fixture
def runner():
    answer = register("r1")
    return Runner.objects.get(name="r1"), answer["secret"]


def api(client, method, path, data=None, token=None, **extra):
    if token:
        extra["HTTP_AUTHORIZATION"] = f"Token {token}"
    body = data if isinstance(data, str) else json.dumps(data or {})
    fn = client.get if method == "GET" else client.post
    if method == "GET":
        return fn(path, **extra)
    return fn(path, body, content_type=extra.pop("content_type", "application/json"), **extra)


def history(client, kernel="add", sizes=SMALL, steps=()):
    made = api(client, "POST", "/api/sessions", {"kernel": kernel, "sizes": sizes}).json()
    for step in steps:
        r = api(client, "POST", f"/api/sessions/{made['id']}/steps", {"action": step}, made["owner_token"])
        assert r.status_code == 201, r.content
    return made["id"], made["owner_token"]


def finish(job, runner_and_secret, median, verified=True):
    runner, _ = runner_and_secret
    protocol.claim(runner, job.id)
    protocol.report(runner, job.id, 1, "done", {"median_s": median, "verified": verified})
    job.refresh_from_db()
    return job


def test_anonymous_and_forged_tokens_cannot_submit(client, runner):
    assert api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL}).status_code == 401
    r = api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL}, token="pdo_made-up")
    assert r.status_code == 401 and "unknown owner token" in r.json()["error"]
    assert api(client, "POST", "/api/jobs", {"kernel": "add"}, token="pdk_nope").status_code == 401
    assert not Job.objects.exists()


def test_the_kernel_label_comes_from_the_source_not_the_request(client, runner):
    _, token = history(client)
    r = api(client, "POST", "/api/jobs", {"source": FAKE_ADD, "kernel": "add", "sizes": SMALL}, token)
    assert r.status_code == 201, r.content
    fake = Job.objects.get(id=r.json()["job"])
    assert fake.kernel == "" and r.json()["kernel"] is None
    relu = kernels.kernel_path("relu").read_text()
    r = api(client, "POST", "/api/jobs", {"source": relu, "kernel": "add", "sizes": SMALL}, token)
    assert Job.objects.get(id=r.json()["job"]).kernel == "relu"
    assert fake.submitter.startswith("owner:")


def test_a_fake_fast_result_never_reaches_the_leaderboard(client, runner):
    _, token = history(client)
    r = api(client, "POST", "/api/jobs", {"source": FAKE_ADD, "kernel": "add", "sizes": SMALL}, token)
    finish(Job.objects.get(id=r.json()["job"]), runner, 30e-9)
    r = api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL, "options": {"dry_run": True}}, token)
    finish(Job.objects.get(id=r.json()["job"]), runner, 31e-9)
    r = api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL}, token)
    finish(Job.objects.get(id=r.json()["job"]), runner, 40e-9, verified=False)
    r = api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL}, token)
    honest = finish(Job.objects.get(id=r.json()["job"]), runner, 2e-3)
    boards = queries.leaderboards("add")
    assert [e["job"] for b in boards for e in b["entries"]] == [honest.id]
    assert [r["job"] for r in queries.verified_records()] == [honest.id]


def test_a_job_attaches_only_to_its_submitters_session(client, runner):
    victim, _ = history(client)
    _, mallory = history(client)
    r = api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL, "session_id": victim,
                                          "step_index": 0}, mallory)
    assert r.status_code == 403 and "not yours" in r.json()["error"]
    assert not Job.objects.filter(session_id=victim).exists()
    assert api(client, "GET", f"/api/sessions/{victim}").json()["steps"][0]["results"] == []


def test_a_job_must_measure_the_step_it_claims(client, runner):
    sid, token = history(client, steps=["split i by 4"])
    bad = {"kernel": "add", "sizes": SMALL, "session_id": sid, "step_index": 1}
    r = api(client, "POST", "/api/jobs", bad, token)                         # no steps: step 0's program
    assert r.status_code == 400 and "not the program of step 1" in r.json()["error"]
    r = api(client, "POST", "/api/jobs", {**bad, "sizes": {"N": 32, "M": 16}, "steps": ["split i by 4"]}, token)
    assert r.status_code == 400
    r = api(client, "POST", "/api/jobs", {**bad, "steps": ["split i by 4"]}, token)
    assert r.status_code == 201, r.content
    job = finish(Job.objects.get(id=r.json()["job"]), runner, 1e-3)
    assert [e["job"] for b in queries.leaderboards("add") for e in b["entries"]] == [job.id]
    # a row that claims a step it does not measure (written around the API) does not rank
    Job.objects.filter(id=job.id).update(step_index=0)
    assert queries.leaderboards("add") == []


def test_only_the_submitter_or_session_owner_cancels(client, runner):
    sid, owner = history(client)
    _, other = history(client)
    r = api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL, "session_id": sid,
                                          "step_index": 0}, owner)
    job_id = r.json()["job"]
    assert api(client, "POST", f"/api/jobs/{job_id}/cancel").status_code == 401
    r = api(client, "POST", f"/api/jobs/{job_id}/cancel", token=other)
    assert r.status_code == 403
    # a cross-site form: text/plain with the victim's cookie and no CSRF token
    browser = Client(enforce_csrf_checks=True)
    page = browser.post("/api/sessions", json.dumps({"kernel": "add", "sizes": SMALL}),
                        content_type="application/json")
    assert page.status_code in (201, 403)
    browser.cookies["sessionid"] = "forged-or-real"
    r = browser.post(f"/api/jobs/{job_id}/cancel", "{}", content_type="text/plain")
    assert r.status_code in (401, 403) and r["Content-Type"].startswith("application/json")
    assert Job.objects.get(id=job_id).state == Job.QUEUED
    r = api(client, "POST", f"/api/jobs/{job_id}/cancel", token=owner)
    assert r.status_code == 200 and r.json()["state"] == "cancelled"


def test_job_quota_answers_429_with_retry_after(client, runner, settings):
    settings.DOJO_JOB_QUOTA_ACTIVE = 2
    _, token = history(client)
    for _ in range(2):
        assert api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL}, token).status_code == 201
    r = api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL}, token)
    assert r.status_code == 429 and int(r["Retry-After"]) > 0 and "limit 2" in r.json()["error"]
    _, other = history(client)
    assert api(client, "POST", "/api/jobs", {"kernel": "add", "sizes": SMALL}, other).status_code == 201


def test_a_registered_runner_name_cannot_be_taken_over(runner):
    victim, secret = runner
    with pytest.raises(Refusal) as exc:
        register("r1")                                        # any valid one-use token
    assert exc.value.status == 403 and "taken" in exc.value.reason
    with pytest.raises(Refusal):
        register("r1", token="pdt_shared-bootstrap")          # the bootstrap token: new names only
    with pytest.raises(Refusal):
        register("r1", secret="pds_guessed")
    assert protocol.authenticate(f"Bearer {secret}").name == "r1"   # the real one still works
    assert register("fresh", token="pdt_shared-bootstrap")["name"] == "fresh"
    again = register("r1", secret=secret)                     # the runner itself, restarting
    _, replacing = RegistrationToken.issue(note="admin", uses=1, replaces="r1")
    assert register("r1", token=replacing)["secret"] != again["secret"]

"""The claim carried in the task message: signed tickets, claims made with them,
and results that carry the claim of a job that ended before it was claimed.

Real models, services and views on the test database; the messages are the ones the
server really publishes, read back from kombu's in-memory broker; the runner's side
(``runners.execute``) runs for real against a server port that is closed.
"""
from __future__ import annotations

import copy
import json
import socket

import pytest

from runners import tickets
from runners.execute import current_path, execute
from webapp.runners import dispatch, protocol, services
from webapp.runners.models import Job, RegistrationToken, Runner
from webapp.refusal import Refusal

TINY = "kernel tiny(N = 4)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i]\n"
DRY = {"dry_run": True}


pytestmark = pytest.mark.usefixtures("memory_broker")


def make_runner(name):
    _, raw = RegistrationToken.issue(note="test", uses=1)
    answer = protocol.register(raw, name, [], {"cpu": {"arch": "x86_64"}}, {})
    return Runner.objects.get(name=name), answer["secret"]


def published(queue: str) -> dict:
    """The kwargs of the next message on a runner's queue (what its worker receives)."""
    with dispatch.app().connection_for_read() as conn:
        message = conn.SimpleQueue(queue).get(timeout=2)
        message.ack()
    args, kwargs, _ = message.payload
    assert message.headers["task"] == "perfdojo.run_job"
    return {"job_id": args[0], **kwargs}


def submit(runner, capture, **options):
    with capture(execute=True):
        job = services.submit_benchmark(TINY, [], None, runner=runner.name, options=options or DRY)
    return job, published(runner.queue)


def refused(fn, *args, **kwargs) -> Refusal:
    with pytest.raises(Refusal) as exc:
        fn(*args, **kwargs)
    return exc.value


@pytest.mark.django_db
def test_the_message_carries_the_job_signed_for_its_runner(django_capture_on_commit_callbacks):
    a, a_secret = make_runner("a")
    _, b_secret = make_runner("b")
    job, msg = submit(a, django_capture_on_commit_callbacks)
    ticket, signature = msg["ticket"], msg["signature"]
    assert msg["job_id"] == job.id and isinstance(msg["published"], float)
    assert ticket["attempt"] == 1 and ticket["runner"] == "a"
    assert ticket["job"]["source"] == job.source and ticket["job"]["options"]["dry_run"] is True
    assert tickets.verify(tickets.key_from_secret(a_secret), ticket, signature)
    assert not tickets.verify(tickets.key_from_secret(b_secret), ticket, signature)   # another runner
    forged = copy.deepcopy(ticket)
    forged["job"]["source"] = forged["job"]["source"].replace("A[i]", "A[0]")
    assert not tickets.verify(tickets.key_from_secret(a_secret), forged, signature)   # altered on the way
    assert not tickets.verify(tickets.key_from_secret(a_secret), ticket, None)


@pytest.mark.django_db
def test_a_ticket_claim_refuses_another_runner_a_stale_attempt_and_a_taken_job(
        django_capture_on_commit_callbacks):
    a, _ = make_runner("a")
    b, _ = make_runner("b")
    job, msg = submit(a, django_capture_on_commit_callbacks)
    attempt = msg["ticket"]["attempt"]
    assert refused(protocol.claim, b, job.id, attempt).status == 409           # not b's job
    assert "stale" in refused(protocol.claim, a, job.id, attempt + 1).reason
    assert refused(protocol.claim, a, job.id, 0).status == 400
    assert protocol.claim(a, job.id, attempt)["attempt"] == 1
    job.refresh_from_db()
    assert job.state == Job.RUNNING and job.attempts == 1
    with django_capture_on_commit_callbacks(execute=True):
        protocol.release(a, job.id, "worker died")              # requeued: a new ticket, attempt 2
    msg2 = published(a.queue)
    assert msg2["ticket"]["attempt"] == 2
    assert "stale" in refused(protocol.claim, a, job.id, attempt).reason     # the old message
    protocol.claim(a, job.id, 2)
    protocol.report(a, job.id, 2, "done", {"dry_run": True})
    assert refused(protocol.claim, a, job.id, 2).status == 409                # finished: taken


@pytest.mark.django_db
def test_a_result_can_carry_the_claim_once(django_capture_on_commit_callbacks, client):
    a, a_secret = make_runner("a")
    b, _ = make_runner("b")
    job, msg = submit(a, django_capture_on_commit_callbacks)
    assert refused(protocol.report, a, job.id, 1, "done", {}).status == 409     # not claimed
    assert refused(protocol.report, a, job.id, 2, "done", {}, claim=True).status == 409
    assert refused(protocol.report, b, job.id, 1, "done", {}, claim=True).status == 403
    r = client.post(f"/api/runners/jobs/{job.id}/result",
                    json.dumps({"attempt": 1, "state": "done", "result": {}, "claim": "yes"}),
                    content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {a_secret}")
    assert r.status_code == 400 and "claim" in r.json()["error"]
    r = client.post(f"/api/runners/jobs/{job.id}/result",
                    json.dumps({"attempt": 1, "state": "done", "result": {"dry_run": True}, "claim": True}),
                    content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {a_secret}")
    assert r.status_code == 200 and r.json()["status"] == "stored"
    job.refresh_from_db()
    assert job.state == Job.DONE and job.attempts == 1 and job.started is not None
    assert [e["event"] for e in job.events] == ["queued", "running", "done"]
    assert protocol.report(a, job.id, 1, "done", {}, claim=True)["status"] == "duplicate"
    assert refused(protocol.claim, a, job.id, 1).status == 409

    cancelled, _ = submit(a, django_capture_on_commit_callbacks)
    services.cancel(cancelled)
    assert protocol.report(a, cancelled.id, 1, "done", {}, claim=True)["status"] == "ignored"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db
def test_the_runner_runs_only_tickets_signed_for_it(django_capture_on_commit_callbacks, tmp_path):
    """execute() with the real message: a forged or misdirected ticket is refused before
    anything runs or is sent; the genuine one runs at once (dry run) and its result, which
    carries the claim, is what it then tries to deliver (here to a closed port)."""
    a, a_secret = make_runner("a")
    _, b_secret = make_runner("b")
    job, msg = submit(a, django_capture_on_commit_callbacks)
    cfg = {"server": f"http://127.0.0.1:{closed_port()}", "secret": a_secret, "name": "a",
           "state_dir": str(tmp_path), "result_patience": 0.3, "claim_after_s": 5}
    forged = copy.deepcopy(msg["ticket"])
    forged["job"]["options"] = {"dry_run": False, "min_time": 60}
    for ticket, signature, name, secret in ((forged, msg["signature"], "a", a_secret),
                                            (msg["ticket"], msg["signature"], "b", b_secret),
                                            (msg["ticket"], "0" * 64, "a", a_secret)):
        outcome = execute(job.id, {**cfg, "name": name, "secret": secret}, published=msg["published"],
                          ticket=ticket, signature=signature)
        assert outcome.startswith("refused: the ticket"), outcome
    outcome = execute(job.id + 1, cfg, ticket=msg["ticket"], signature=msg["signature"])
    assert outcome.startswith("refused: the ticket")                            # not this job
    outcome = execute(job.id, cfg, published=msg["published"], ticket=msg["ticket"],
                      signature=msg["signature"])
    assert outcome.startswith("undelivered:"), outcome
    assert not (tmp_path / "current.json").exists() and current_path(str(tmp_path)).endswith("current.json")


def test_a_delivery_of_a_started_job_is_not_started_again():
    from runners.tickets import duplicate_reason
    queued = {"state": "queued", "final": False, "runner": "r1", "attempts": 0}
    assert duplicate_reason(queued, 1, "r1") is None
    assert duplicate_reason(None, 1, "r1") is None                     # server not asked: claim decides
    assert "already started" in duplicate_reason({**queued, "state": "running", "attempts": 1}, 1, "r1")
    assert "already started" in duplicate_reason({**queued, "attempts": 1}, 1, "r1")   # requeued
    assert duplicate_reason({**queued, "attempts": 1}, 2, "r1") is None
    assert "done" in duplicate_reason({**queued, "state": "done", "final": True, "attempts": 1}, 2, "r1")
    assert "r2" in duplicate_reason({**queued, "runner": "r2"}, 1, "r1")

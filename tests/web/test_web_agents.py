"""Agent runs in process: the editor panel, the plain-form (no JS) start
and stop, queued runs stopping at once, the signed notify endpoint, orphaned runs, the
OpenAPI entries, and the dataset export over jobs stored in the database.

The broker is kombu's in-memory transport here (a run's task message goes nowhere), and
the runner is a Runner row with a fresh heartbeat: these tests never execute a run; the
real worker, runner and compiles are in tests/runners/test_web_agents_e2e.py.
"""
from __future__ import annotations

import io
import json
import os

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from dojo_core.records import text_hash
from webapp.agents import live
from webapp.agents.models import AgentRun
from webapp.agents.tasks import execute_run, fail_orphans, worker_name
from webapp.runners.models import Job, Runner

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("memory_broker")]

SIZES = {"N": 8, "M": 8, "K": 8}


@pytest.fixture
def runner():
    return Runner.objects.create(name="box", secret_hash="x" * 64, queue="runner-box", labels=["cpu"],
                                 last_heartbeat=timezone.now())


def new_session(client):
    r = client.post("/api/sessions", json.dumps({"kernel": "matmul", "sizes": SIZES}),
                    content_type="application/json")
    assert r.status_code == 201, r.content
    return r.json()


def browser_session(client):
    """A session made from the gallery form: owned by this browser session."""
    r = client.post("/new", {"kernel": "matmul", "size_N": 8, "size_M": 8, "size_K": 8})
    assert r.status_code == 302, r.content
    return r["Location"].split("/s/")[1].strip("/")


def test_panel_offers_the_registry_agents_to_the_owner_only(runner):
    owner = Client()
    sid = browser_session(owner)
    page = owner.get(f"/s/{sid}/").content.decode()
    assert 'id="agent-form"' in page and 'value="random"' in page and 'value="box"' in page
    other = Client().get(f"/s/{sid}/").content.decode()
    assert 'id="agent-panel"' in other and 'id="agent-form"' not in other


def test_plain_form_start_then_stop_of_a_queued_run(runner):
    client = Client()
    sid = browser_session(client)
    r = client.post(f"/s/{sid}/agents", {"agent": "random", "budget": "5", "runner": "box", "step": "0"})
    assert r.status_code == 302 and r["Location"].startswith(f"/s/{sid}/?step=0")
    run = AgentRun.objects.get(session_id=sid)
    assert (run.state, run.agent, run.budget, run.runner, run.start_step) == ("queued", "random", 5, "box", 0)
    page = client.get(f"/s/{sid}/").content.decode()
    assert f'id="agent-run-{run.id}"' in page and f"/agents/{run.id}/stop" in page
    r = client.post(f"/s/{sid}/agents", {"agent": "random", "budget": "5"})
    assert r.status_code == 409                                   # one active run per session
    assert Client().post(f"/s/{sid}/agents/{run.id}/stop").status_code == 403     # not the owner
    r = client.post(f"/s/{sid}/agents/{run.id}/stop")
    assert r.status_code == 302
    run.refresh_from_db()
    assert run.state == "stopped" and run.stop_requested and run.finished is not None
    assert execute_run(run.id) == "skipped"                       # a late task message does nothing


def test_htmx_start_refusal_is_shown_in_the_panel(runner):
    client = Client()
    sid = browser_session(client)
    r = client.post(f"/s/{sid}/agents", {"agent": "random", "budget": "0", "step": "0"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 400
    assert 'id="agent-error"' in r.content.decode() and "budget must be between 1 and" in r.content.decode()
    assert not AgentRun.objects.exists()
    r = client.post(f"/s/{sid}/agents", {"agent": "greedy", "budget": "3", "step": "0"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and 'id="agent-runs"' in r.content.decode()
    assert AgentRun.objects.get().agent == "greedy"


def test_no_runner_online_is_refused():
    client = Client()
    body = new_session(client)
    r = client.post(f"/api/sessions/{body['id']}/agents", json.dumps({"agent": "random", "budget": 3}),
                    content_type="application/json", HTTP_AUTHORIZATION=f"Token {body['owner_token']}")
    assert r.status_code == 409 and r.json()["error"] == "no runner is online to measure the agent's steps"


def test_notify_needs_the_run_signature(runner):
    client = Client()
    body = new_session(client)
    r = client.post(f"/api/sessions/{body['id']}/agents", json.dumps({"agent": "random", "budget": 3}),
                    content_type="application/json", HTTP_AUTHORIZATION=f"Token {body['owner_token']}")
    run_id = r.json()["run"]
    url = f"/api/agents/{run_id}/notify"
    assert client.post(url).status_code == 403
    assert client.post(url, HTTP_X_DOJO_AGENT_SIGNATURE=live.signature(run_id + 1)).status_code == 403
    assert client.post(url, HTTP_X_DOJO_AGENT_SIGNATURE=live.signature(run_id)).status_code == 204
    html = live.render_update(body["id"])
    assert 'id="tree" hx-swap-oob="true"' in html and f'id="agent-run-{run_id}"' in html
    assert 'id="agent-runs" class="jobs agent-runs" hx-swap-oob="true"' in html


def test_orphaned_running_runs_fail_and_live_ones_stay(runner):
    body = new_session(Client())
    host = worker_name().split(":")[0]
    dead = AgentRun.objects.create(session_id=body["id"], agent="random", budget=3, state="running",
                                   worker=f"{host}:999999999")
    alive = AgentRun.objects.create(session_id=body["id"], agent="random", budget=3, state="running",
                                    worker=f"{host}:{os.getppid()}")
    assert fail_orphans() == 1
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert dead.state == "failed" and "stopped" in dead.error and alive.state == "running"


def test_openapi_lists_the_agent_endpoints():
    doc = Client().get("/api/openapi.json").json()
    for path in ("/api/agents", "/api/sessions/{id}/agents", "/api/agents/{run}", "/api/agents/{run}/stop",
                 "/api/dataset.jsonl"):
        assert path in doc["paths"], path


def _job(session, step_index, steps, state, result):
    return Job.objects.create(state=state, source=session["source"], steps=steps, sizes=SIZES, kernel="matmul",
                              session_id=session["id"], step_index=step_index, result=result,
                              finished=timezone.now() if state in ("done", "failed") else None)


def test_dataset_has_state_action_time_runner_of_finished_jobs(runner, tmp_path):
    client = Client()
    body = new_session(client)
    auth = {"HTTP_AUTHORIZATION": f"Token {body['owner_token']}"}
    step = client.post(f"/api/sessions/{body['id']}/steps", json.dumps({"parent": 0, "action": "split i by 4"}),
                       content_type="application/json", **auth).json()
    session = client.get(f"/api/sessions/{body['id']}").json()
    root = _job(session, 0, [], "done", {"median_s": 2e-6, "verified": True, "runner": "box"})
    Job.objects.filter(id=root.id).update(runner=runner)
    _job(session, 1, ["split i by 4"], "failed", {"error": "compile error: boom"})
    _job(session, 1, ["split i by 4"], "queued", None)                  # measured nothing: left out
    lines = [json.loads(x) for x in b"".join(client.get("/api/dataset.jsonl").streaming_content).splitlines()]
    assert [(x["action"], x["median_s"], x["verified"]) for x in lines] == [
        (None, 2e-6, True), ("split i by 4", None, False)]
    assert all(x["format"] == "perfdojo-transitions" and x["kernel"] == "matmul" for x in lines)
    assert lines[0]["runner"] == "box" and lines[0]["state_ir"] == session["source"]
    assert lines[0]["next_state_hash"] == lines[0]["state_hash"] == lines[1]["state_hash"]    # they chain
    assert lines[1]["state_ir"] == session["source"] and lines[1]["steps_before"] == []
    assert lines[1]["next_state_hash"] == text_hash(step["ir"]) and lines[1]["error"] == "compile error: boom"
    assert lines[1]["job"] == root.id + 1

    out, err = io.StringIO(), io.StringIO()
    call_command("export_dataset", stdout=out, stderr=err)
    assert [json.loads(x) for x in out.getvalue().splitlines()] == lines and "2 records" in err.getvalue()
    target = tmp_path / "d.jsonl"
    call_command("export_dataset", "--out", str(target), stderr=io.StringIO())
    assert [json.loads(x) for x in target.read_text().splitlines()] == lines
    with pytest.raises(CommandError, match="No such file or directory"):
        call_command("export_dataset", "--out", str(tmp_path / "no" / "d.jsonl"))

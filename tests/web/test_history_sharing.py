"""Sharing without loss: exports and forks keep the benchmark results, each marked with the
runner that measured it; an import keeps only results of the programs it replays to."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from dojo_core.records import text_hash
from webapp.agents import dataset
from webapp.histories import integration, services, transfer
from webapp.histories.models import Session, Step
from webapp.runners.models import Job, Runner

pytestmark = pytest.mark.django_db


def start(client, kernel="relu"):
    r = client.post("/new", {"kernel": kernel})
    assert r.status_code == 302, r.content
    return r["Location"].split("/")[2]


@pytest.fixture
def measured():
    """A relu history (root, split i by 4) with one result per step on runner "box"."""
    runner = Runner.objects.create(name="box", secret_hash="x" * 64, queue="runner-box",
                                   last_heartbeat=timezone.now())
    c = Client()
    sid = start(c)
    assert c.post(f"/s/{sid}/apply", {"parent": 0, "action": "split i by 4"}).status_code == 302
    for step, median in ((0, 0.004), (1, 0.002)):
        ir = Step.objects.get(session_id=sid, index=step).ir
        Job.objects.create(state="done", source="-", runner=runner, session_id=sid, step_index=step,
                           finished=timezone.now(), program_hash=text_hash(ir), kernel="relu",
                           result={"median_s": median, "min_s": median, "max_s": median * 1.1, "verified": True,
                                   "compiler": "gcc 12"})
    Job.objects.create(state="failed", source="-", runner=runner, session_id=sid, step_index=1,
                       result={"error": "boom"})
    return c, sid


def medians(sid) -> dict:
    results = integration.results_by_step(integration.jobs_for(sid))
    return {i: sorted((m["runner"], m["median_s"]) for m in e["measurements"]) for i, e in results.items()}


def test_export_lists_each_steps_results_with_its_runner(measured):
    c, sid = measured
    data = json.loads(c.get(f"/s/{sid}/export.json").content)
    assert data["format"] == "perfdojo-history" and data["version"] == 1
    (root,) = data["steps"][0]["results"]
    assert root["runner"] == "box" and root["result"]["median_s"] == 0.004 and root["result"]["compiler"] == "gcc 12"
    assert root["program_hash"] == text_hash(data["steps"][0]["ir"])
    assert [r["result"]["median_s"] for r in data["steps"][1]["results"]] == [0.002]   # the failed job is not a result


def test_a_fork_keeps_the_results_marked_with_their_runner_and_origin(measured):
    c, sid = measured
    other = Client()
    r = other.post(f"/s/{sid}/fork", {"step": 1})
    assert r.status_code == 302
    fork = r["Location"].split("/")[2]
    assert fork != sid and medians(fork) == medians(sid) == {0: [("box", 0.004)], 1: [("box", 0.002)]}
    copies = Job.objects.filter(session_id=fork)
    assert copies.count() == 2 and all(j.runner.name == "box" and j.state == "done" for j in copies)
    assert {j.result["imported_from"]["session"] for j in copies} == {sid}
    assert all(j.kernel == "" and j.submitter == f"import:{fork}" for j in copies)   # not new measurements
    html = other.get(f"/s/{fork}/?step=1").content.decode()
    assert 'id="t-1"' in html and "2.00 ms" in html                 # the tree's badge in the fork
    assert medians(sid) == {0: [("box", 0.004)], 1: [("box", 0.002)]}   # the original is untouched


def test_an_import_from_another_server_keeps_results_of_the_replayed_programs_only(measured):
    c, sid = measured
    data = json.loads(c.get(f"/s/{sid}/export.json").content)
    data["steps"][1]["results"].append({"runner": "far-away", "program_hash": "0" * 64,
                                        "result": {"median_s": 0.5}})
    data["steps"][1]["results"].append({"runner": "far-away", "result": {"median_s": 0.003}})
    session, _token, warnings = transfer.import_history(services.Actor(session_key="k"), data)
    assert warnings == ["step 1: a result on far-away measured another program; not kept"]
    assert medians(session.id) == {0: [("box", 0.004)], 1: [("box", 0.002), ("far-away", 0.003)]}
    far = Job.objects.get(session_id=session.id, result__runner="far-away")
    assert far.runner is None and far.result["imported_from"]["runner"] == "far-away"


def test_an_imported_result_is_marked_with_the_runner_the_file_names(measured):
    c, sid = measured
    data = json.loads(c.get(f"/s/{sid}/export.json").content)
    data["steps"][0]["results"] = [{"runner": "elsewhere", "finished": "2026-99-99T00:00:00+00:00",
                                    "result": {"median_s": 0.5, "runner": {"not": "a name"}}}]
    r = Client().post("/api/sessions/import", json.dumps(data), content_type="application/json")
    assert r.status_code == 201, r.content
    job = Job.objects.get(session_id=r.json()["id"], step_index=0)
    assert job.result["runner"] == "elsewhere" and job.finished is not None


@pytest.mark.parametrize("results, why", [
    ("fast", "steps[1].results must be a list"),
    ([{"runner": "box"}], "steps[1].results[0] must be an object with a 'result' object"),
    ([{"runner": "box", "result": {"median_s": -1}}], "median_s must be a positive number"),
    ([{"runner": "", "result": {"median_s": 1}}], "runner must name the runner"),
    ([{"runner": "box", "batch": 5, "result": {"median_s": 1}}], "batch must be a string"),
    ([{"runner": "box", "result": {"median_s": 1e400}}], "median_s must be a positive number"),
])
def test_malformed_results_refuse_the_import_and_store_nothing(measured, results, why):
    c, sid = measured
    data = json.loads(c.get(f"/s/{sid}/export.json").content)
    data["steps"][1]["results"] = results
    sessions, jobs = Session.objects.count(), Job.objects.count()
    r = Client().post("/api/sessions/import", json.dumps(data), content_type="application/json")
    assert r.status_code == 400 and why in r.json()["error"]
    assert Session.objects.count() == sessions and Job.objects.count() == jobs


def test_the_share_link_carries_the_viewed_step(measured):
    c, sid = measured
    html = Client().get(f"/s/{sid}/?step=1").content.decode()
    assert f'id="share-url" type="text" readonly value="http://testserver/s/{sid}/?step=1"' in html


def test_copied_results_are_not_records_of_the_dataset(measured):
    """A fork's copies of results are not new measurements: /api/dataset.jsonl lists each
    measurement once, under the session that made it."""
    c, sid = measured
    fork = Client().post(f"/s/{sid}/fork", {"step": 1})["Location"].split("/")[2]
    assert Job.objects.filter(session_id=fork).count() == 2
    lines = [json.loads(line) for line in dataset.dataset_lines()]
    done = [r for r in lines if r["median_s"] is not None]
    assert sorted(r["median_s"] for r in done) == [0.002, 0.004]

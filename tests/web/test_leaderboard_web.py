"""Leaderboards and library downloads over a fixture database: runners with two
hardware fingerprints, histories made through the API, done/failed jobs; the leaderboard
API, the kernel page and the gallery's "best known" line, the records endpoint, and the
.tar.gz library built from the database (compiled with make, its C tests run)."""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile

import pytest
from django.test import Client
from django.utils import timezone

from dojo_core import kernels
from dojo_core.codegen.targets import detect_host_target
from dojo_core.records import fingerprint_of_hardware
from webapp.runners import services
from webapp.runners.models import Job, Runner

SIZES = {"N": 16, "M": 40}
STEPS = ["parallelize i"]
HW_A = {"cpu": {"model": "Fixture CPU A", "arch": "x86_64", "flags": ["avx2"], "logical_cpus": 2,
                "cores": 2}, "compilers": {"cc": "cc 12"}, "gpus": []}
HW_B = {"cpu": {"model": "Fixture CPU B", "arch": "x86_64", "flags": ["avx2"], "logical_cpus": 8,
                "cores": 8}, "compilers": {"cc": "cc 12"}, "gpus": []}


def make_runner(name, hw, labels=()):
    return Runner.objects.create(name=name, secret_hash=f"hash-{name}", queue=f"runner-{name}",
                                 labels=list(labels), hardware=hw, last_heartbeat=timezone.now())


def make_history(client) -> str:
    r = client.post("/api/sessions", json.dumps({"kernel": "softmax", "sizes": SIZES}),
                    content_type="application/json")
    assert r.status_code == 201, r.content
    body = r.json()
    r = client.post(f"/api/sessions/{body['id']}/steps", json.dumps({"parent": 0, "action": STEPS[0]}),
                    content_type="application/json", HTTP_AUTHORIZATION=f"Token {body['owner_token']}")
    assert r.status_code == 201, r.content
    return body["id"]


def make_job(runner, steps, median, state="done", verified=True, session=None, step=None, sizes=SIZES,
             batch=""):
    target = detect_host_target()
    result = {"median_s": median, "min_s": median, "max_s": median * 1.1, "verified": verified,
              "compiler": "cc 12", "flags": list(target.flags), "threads": 2, "target": target.name,
              "runner": runner.name, "hardware": runner.hardware}
    source = kernels.kernel_path("softmax").read_text()
    phash = services.validate(source, steps, sizes)[4]               # as submit_benchmark stores it
    return Job.objects.create(state=state, kernel="softmax", source=source,
                              sizes=sizes, steps=steps, runner=runner, result=result, program_hash=phash,
                              session_id=session, step_index=step, finished=timezone.now(), batch=batch)


@pytest.fixture
def db_fixture(db):
    client = Client()
    sid = make_history(client)
    a, b = make_runner("box-a", HW_A, ["lab"]), make_runner("box-b", HW_B)
    make_runner("box-new", HW_B | {"cpu": {**HW_B["cpu"], "model": "Fixture CPU C"}})
    jobs = {
        "a_root": make_job(a, [], 4e-3, session=sid, step=0, batch="agent-a"),
        "a_best": make_job(a, STEPS, 1e-3, session=sid, step=1, batch="agent-a"),
        "a_slow": make_job(a, STEPS, 2e-3),                                   # no history
        "a_failed": make_job(a, STEPS, 1e-5, state="failed", verified=False, session=sid, step=1),
        "b_root": make_job(b, [], 3e-3, session=sid, step=0, batch="agent-b"),
        "b_best": make_job(b, STEPS, 2e-3, session=sid, step=1, batch="agent-b"),
    }
    return {"client": client, "session": sid, "jobs": jobs}


def test_leaderboard_api_groups_by_fingerprint_best_first(db_fixture):
    r = db_fixture["client"].get("/api/kernels/softmax/leaderboard")
    assert r.status_code == 200
    boards = {b["fingerprint"]: b for b in r.json()["boards"]}
    fa, fb = fingerprint_of_hardware(HW_A), fingerprint_of_hardware(HW_B)
    assert set(boards) == {fa, fb}
    a = boards[fa]
    assert a["sizes"] == SIZES and a["runners"] == ["box-a"] and a["baseline_s"] == 4e-3
    # failed job left out; a_slow runs the same program as a_best: one row, its best
    assert [e["median_s"] for e in a["entries"]] == [1e-3, 4e-3]
    assert [e["runs"] for e in a["entries"]] == [2, 1]
    assert [e["speedup"] for e in a["entries"]] == [4.0, 1.0]           # root timed in the same batch
    assert [e["speedup_across_runs"] for e in a["entries"]] == [4.0, 1.0]
    sid = db_fixture["session"]
    assert [e["url"] for e in a["entries"]] == [f"/s/{sid}/?step=1", f"/s/{sid}/?step=0"]
    assert boards[fb]["best_speedup"] == pytest.approx(1.5)
    assert "Fixture CPU A" in a["hardware"]
    r = db_fixture["client"].get("/api/kernels/nonesuch/leaderboard")
    assert r.status_code == 404 and r.json() == {"error": "no library kernel named 'nonesuch'"}


def test_kernel_page_and_gallery_show_best_known(db_fixture):
    client, sid = db_fixture["client"], db_fixture["session"]
    page = client.get("/kernels/softmax/").content.decode()
    assert f'href="/s/{sid}/?step=1"' in page
    assert f'best known (timed with its root): <a href="/s/{sid}/?step=1" title="{fingerprint_of_hardware(HW_A)}">' \
        "4.0x on Fixture CPU A · 2 cores</a>" in page and "1.5x on Fixture CPU B · 8 cores" in page
    assert page.index("4.0x on Fixture CPU A") < page.index("1.5x on Fixture CPU B")
    assert '<option value="box-a">box-a (runner)</option>' in page
    assert "box-new (runner, no measurements)" in page
    gallery = client.get("/").content.decode()
    card = gallery[gallery.index('id="kernel-softmax"'):]
    card = card[:card.index("</article>")]
    assert "best known (timed with its root): " in card and "4.0x on Fixture CPU A" in card and 'href="/kernels/softmax/"' in card
    assert client.get("/kernels/nonesuch/").status_code == 404


def test_a_speedup_across_runs_is_never_shown_as_the_speedup(db_fixture):
    a = Runner.objects.get(name="box-a")
    make_job(a, ["parallelize i", "split j by 8"], 0.5e-3)   # no root timed with it: 8x only across runs
    board = next(b for b in db_fixture["client"].get("/api/kernels/softmax/leaderboard").json()["boards"]
                 if b["runners"] == ["box-a"])
    top = board["entries"][0]
    assert top["median_s"] == 0.5e-3 and top["speedup"] is None and top["speedup_across_runs"] == 8.0
    assert board["best_speedup"] == 4.0 and board["best_speedup_across_runs"] == 8.0
    page = db_fixture["client"].get("/kernels/softmax/").content.decode()
    assert "vs. fastest untransformed" in page and "not timed together" in page
    assert "8.0x on" not in page and "4.0x on Fixture CPU A" in page          # best known: same batch only


def test_records_endpoint_speaks_the_records_format(db_fixture):
    client = db_fixture["client"]
    body = client.get("/api/library/records").json()
    assert len(body["records"]) == 5
    assert {r["name"] for r in body["runners"]} == {"box-a", "box-b", "box-new"}
    lab = client.get("/api/library/records?target=lab").json()["records"]
    assert sorted(r["median_s"] for r in lab) == [1e-3, 2e-3, 4e-3]
    r = lab[0]
    assert r["fingerprint"] == fingerprint_of_hardware(HW_A) and r["verified"] is True
    assert r["sizes"] == SIZES and r["runner"] == "box-a" and r["labels"] == ["lab"]
    assert r["history_url"] is None or r["history_url"].startswith("http://testserver/s/")
    bad = client.get("/api/library/records?target=nobody")
    assert bad.status_code == 400 and bad.json()["error"].startswith("unknown target 'nobody'")


def _archive(client, url):
    r = client.get(url)
    assert r.status_code == 200, r.content
    assert r["Content-Type"] == "application/gzip"
    return r


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_library_archive_builds_and_passes_its_tests(db_fixture, tmp_path):
    r = _archive(db_fixture["client"], "/api/library?target=box-a")
    assert 'filename="perfdojo-library-box-a.tar.gz"' in r["Content-Disposition"]
    with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz") as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / "perfdojo-library-box-a"
    manifest = json.loads((root / "library.json").read_text())
    (fn,) = manifest["functions"]
    assert (fn["name"], fn["median_s"], fn["steps"], fn["speedup"]) == \
        ("perfdojo_softmax_16x40", 1e-3, 1, 4.0)
    prov = json.loads((root / "provenance" / "perfdojo_softmax_16x40.json").read_text())
    assert prov["job"] == db_fixture["jobs"]["a_best"].id and prov["runner"] == "box-a"
    assert prov["history_url"].endswith(f"/s/{db_fixture['session']}/?step=1")
    assert subprocess.run(["make", "-s", "-j2"], cwd=root, capture_output=True, timeout=300).returncode == 0
    run = subprocess.run(["./perfdojo_test"], cwd=root, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "ok perfdojo_softmax_16x40" in run.stdout
    page = _archive(db_fixture["client"], "/library/download?target=lab")      # the button
    assert 'filename="perfdojo-library-lab.tar.gz"' in page["Content-Disposition"]


def test_library_archive_refusals(db_fixture):
    client = db_fixture["client"]
    cases = [("/api/library", "target: a runner name, a label, a fingerprint or 'local' is required"),
             ("/api/library?target=nobody", "unknown target 'nobody'"),
             ("/api/library?target=box-new", "no verified entries for target 'box-new'"),
             ("/api/library?target=box-a&kernels=nonesuch", "unknown kernel(s): nonesuch")]
    for url, reason in cases:
        r = client.get(url)
        assert r.status_code == 400 and r.json()["error"].startswith(reason), (url, r.content)
    page = client.get("/library/download?target=nobody")
    assert page.status_code == 400 and b"unknown target &#x27;nobody&#x27;" in page.content
    assert client.post("/api/library?target=box-a").status_code in (403, 405)


def test_openapi_describes_the_leaderboard_routes(db):
    paths = Client().get("/api/openapi.json").json()["paths"]
    assert {"/api/kernels/{name}/leaderboard", "/api/library/records", "/api/library"} <= set(paths)


@pytest.mark.django_db(transaction=True)
def test_cli_builds_from_the_server(live_server, tmp_path):
    client = Client()
    sid = make_history(client)
    a = make_runner("box-a", HW_A, ["lab"])
    make_job(a, [], 4e-3, session=sid, step=0)
    make_job(a, STEPS, 1e-3, session=sid, step=1)
    out = tmp_path / "lib"
    r = subprocess.run([sys.executable, "-m", "dojo_core", "library", "build", "--target", "lab",
                        "--out", str(out), "--server", live_server.url, "--no-replay"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "perfdojo_softmax_16x40: tuned (1 steps), 4.00x" in r.stdout.splitlines(), r.stdout + r.stderr
    prov = json.loads((out / "provenance" / "perfdojo_softmax_16x40.json").read_text())
    assert prov["history_url"] == f"{live_server.url}/s/{sid}/?step=1"
    r = subprocess.run([sys.executable, "-m", "dojo_core", "library", "build", "--target", "nobody",
                        "--out", str(out), "--server", live_server.url], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and r.stderr.startswith("library build: unknown target 'nobody'")

"""The JSON API of DESIGN.md section 9: every endpoint, every refusal with its
reason, ownership (users, API tokens, anonymous owner tokens, browser sessions), fork,
export/import round trip, and that refusals change nothing stored."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dojo_core import kernels
from dojo_core.printer import print_program
from webapp.api.models import ApiToken
from webapp.histories import integration
from webapp.histories.models import Session, Step

pytestmark = pytest.mark.django_db

BAD_SOURCE = """kernel shift(N = 4)
in  A: f32[N]
out B: f32[N]

for i in 0..N:
  B[i] = A[i + 1]
"""
GOOD_SOURCE = """kernel scale(N = 64)
in  X: f32[N]
out Y: f32[N]

for i in 0..N:
  Y[i] = 2 * X[i]
"""


def post(client, url, data=None, token=None, raw=None, **extra):
    body = raw if raw is not None else json.dumps(data if data is not None else {})
    if token:
        extra["HTTP_AUTHORIZATION"] = f"Token {token}"
    return client.post(url, body, content_type="application/json", **extra)


def new_session(client=None, token=None, **data):
    client = client or Client()
    r = post(client, "/api/sessions", data or {"kernel": "matmul"}, token=token)
    assert r.status_code == 201, r.content
    return r.json()


def snapshot():
    return (sorted(Session.objects.values_list("id", "current", "owner_id")),
            sorted(Step.objects.values_list("session_id", "index", "parent", "text", "ir")))


# ============================================================================ create

def test_create_from_kernel_returns_id_url_and_owner_token():
    body = new_session()
    assert set(body) >= {"id", "url", "owner_token"}
    assert len(body["id"]) == 10 and body["id"].isalnum() and body["id"] == body["id"].lower()
    assert body["url"] == f"/s/{body['id']}/"
    s = Session.objects.get(id=body["id"])
    assert s.kernel == "matmul" and s.owner is None
    assert s.source == print_program(kernels.load_kernel("matmul"))
    root = s.steps.get(index=0)
    assert root.parent is None and root.text == "" and root.ir == s.source
    assert body["owner_token"] not in s.owner_token_hash      # only a hash is stored


def test_create_from_kernel_at_other_sizes():
    body = new_session(kernel="matmul", sizes={"N": 64, "M": 32, "K": 16})
    s = Session.objects.get(id=body["id"])
    assert s.sizes == {"N": 64, "M": 32, "K": 16}
    assert "kernel matmul(N = 64, M = 32, K = 16)" in s.source


def test_create_from_source_is_canonical():
    body = new_session(source=GOOD_SOURCE.replace("2 * X[i]", "2*X[i]"))
    s = Session.objects.get(id=body["id"])
    assert s.source == GOOD_SOURCE and s.kernel == ""


def test_ids_are_unique_for_the_same_source():
    ids = {new_session(source=GOOD_SOURCE)["id"] for _ in range(5)}
    assert len(ids) == 5


@pytest.mark.parametrize("data, status, reason", [
    ({}, 400, "exactly one of 'kernel'"),
    ({"kernel": "matmul", "source": GOOD_SOURCE}, 400, "exactly one of"),
    ({"kernel": "nope"}, 400, "unknown kernel"),
    ({"kernel": "../etc/passwd"}, 400, "unknown kernel"),
    ({"kernel": 5}, 400, "kernel must be"),
    ({"kernel": "matmul", "sizes": {"Q": 3}}, 400, "has no size 'Q'"),
    ({"kernel": "matmul", "sizes": {"N": 0}}, 400, "positive"),
    ({"kernel": "matmul", "sizes": [1]}, 400, "sizes must be"),
    ({"source": 12}, 400, "source must be a string"),
    ({"source": "kernel x(\n"}, 400, "<source>:"),
    ({"kernel": "matmul", "extra": 1}, 400, "unknown field"),
])
def test_create_refusals(data, status, reason):
    before = snapshot()
    r = post(Client(), "/api/sessions", data)
    assert r.status_code == status
    assert reason in r.json()["error"]
    assert snapshot() == before


def test_bad_source_gives_the_located_checker_message():
    r = post(Client(), "/api/sessions", {"source": BAD_SOURCE})
    assert r.status_code == 400
    body = r.json()
    assert body["error"].startswith("<source>:6:10: A[i + 1] can be out of bounds")
    assert body["errors"][0]["line"] == 6 and body["errors"][0]["col"] == 10
    assert Session.objects.count() == 0


def test_source_over_64_kib_is_refused():
    big = GOOD_SOURCE + ("# padding\n" * 7000)
    assert len(big) > 64 * 1024
    r = post(Client(), "/api/sessions", {"source": big})
    assert r.status_code == 413 and "source too large" in r.json()["error"]
    assert Session.objects.count() == 0


def test_malformed_requests():
    c = Client()
    assert "nested too deeply" in post(c, "/api/sessions", raw="[" * 100000).json()["error"]
    deep = "kernel d(N = 4)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = " + "(" * 30000 + "A[i]" + ")" * 30000 + "\n"
    r = post(c, "/api/sessions", {"source": deep})
    assert r.status_code in (201, 400), r.content          # never a 500
    assert post(c, "/api/sessions", raw="{not json").status_code == 400
    assert "JSON object" in post(c, "/api/sessions", raw="[1, 2]").json()["error"]
    r = c.post("/api/sessions", "kernel=matmul", content_type="application/x-www-form-urlencoded")
    assert r.status_code == 415
    r = c.get("/api/sessions")
    assert r.status_code == 405 and "not allowed" in r.json()["error"] and r["Allow"] == "POST"
    r = c.get("/api/nothing/here")
    assert r.status_code == 404 and "openapi" in r.json()["error"]


# ============================================================================ read

def test_get_session_lists_steps_with_id_parent_text_ir_results():
    body = new_session()
    sid, token = body["id"], body["owner_token"]
    post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, token=token)
    r = Client().get(f"/api/sessions/{sid}")
    assert r.status_code == 200
    data = r.json()
    assert data["id"] == sid and data["kernel"] == "matmul" and data["current"] == 1
    assert data["editable"] is False          # a stranger without the token
    assert [(s["id"], s["parent"], s["text"]) for s in data["steps"]] == [(0, None, ""), (1, 0, "split i by 32")]
    assert "for i0 in 0..N // 32:" in data["steps"][1]["ir"]
    assert all(s["results"] == [] for s in data["steps"])


@pytest.mark.parametrize("url", ["/api/sessions/zzzzzzzzzz", "/api/sessions/zzzzzzzzzz/actions",
                                 "/api/sessions/zzzzzzzzzz/export", "/api/sessions/zzzzzzzzzz/steps/0"])
def test_unknown_session_is_404_with_reason(url):
    r = Client().get(url)
    assert r.status_code == 404 and "no session 'zzzzzzzzzz'" in r.json()["error"]


def test_actions_at_a_step_have_text_and_kind():
    sid = new_session()["id"]
    r = Client().get(f"/api/sessions/{sid}/actions?step=0")
    assert r.status_code == 200
    acts = r.json()["actions"]
    assert {"text": "split i by 32", "kind": "split"} in acts
    assert {"text": "interchange i j", "kind": "interchange"} in acts
    assert r.json()["count"] == len(acts) and r.json()["step"] == 0
    at = Client().get(f"/api/sessions/{sid}/actions?step=0&at=k").json()["actions"]
    assert at and all("k" in a["text"].split() for a in at)


@pytest.mark.parametrize("query, status, reason", [
    ("step=7", 404, "has no step 7"), ("step=x", 400, "step must be"), ("step=-1", 400, "step must be"),
])
def test_actions_refusals(query, status, reason):
    sid = new_session()["id"]
    r = Client().get(f"/api/sessions/{sid}/actions?{query}")
    assert r.status_code == status and reason in r.json()["error"]


def test_step_detail_with_code():
    body = new_session()
    r = Client().get(f"/api/sessions/{body['id']}/steps/0?code=c")
    assert r.status_code == 200
    assert "dojo_kernel" in r.json()["code"] or r.json()["code_error"]
    assert Client().get(f"/api/sessions/{body['id']}/steps/0?code=fortran").status_code == 400
    r = Client().get(f"/api/sessions/{body['id']}/steps/0/code/c")
    assert r.status_code == 200 and r["Content-Disposition"].endswith('.c"')


# ============================================================================ steps

def test_apply_step_replays_and_stores_canonical_ir():
    body = new_session()
    sid, token = body["id"], body["owner_token"]
    r = post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "  split   i by 32 "}, token=token)
    assert r.status_code == 201
    step = r.json()
    assert step["id"] == 1 and step["parent"] == 0 and step["text"] == "split i by 32" and step["created"] is True
    from dojo_core.transforms import apply_step
    expected = print_program(apply_step(kernels.load_kernel("matmul"), "split i by 32"))
    assert step["ir"] == expected == Step.objects.get(session_id=sid, index=1).ir
    # the same action again returns the same step
    again = post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, token=token)
    assert again.status_code == 200 and again.json()["id"] == 1 and again.json()["created"] is False
    # default parent: the current step
    r = post(Client(), f"/api/sessions/{sid}/steps", {"action": "split j by 32"}, token=token)
    assert r.status_code == 201 and r.json()["parent"] == 1


def test_branches_form_a_tree():
    body = new_session()
    sid, token = body["id"], body["owner_token"]
    post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, token=token)
    r = post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "interchange i j"}, token=token)
    assert r.status_code == 201 and r.json()["parent"] == 0 and r.json()["id"] == 2
    steps = Client().get(f"/api/sessions/{sid}").json()["steps"]
    assert [(s["id"], s["parent"]) for s in steps] == [(0, None), (1, 0), (2, 0)]


@pytest.mark.parametrize("data, status, reason", [
    ({"parent": 0, "action": "interchange i k"}, 400, "is not legal at step 0"),
    ({"parent": 0, "action": "split q by 4"}, 400, "no loop 'q'"),
    ({"parent": 0, "action": "frobnicate i"}, 400, "unknown transformation 'frobnicate'"),
    ({"parent": 0, "action": ""}, 400, "action is empty"),
    ({"parent": 0, "action": 3}, 400, "action must be a step text"),
    ({"parent": 0, "action": "split i by 4 # x"}, 400, "must not contain '#'"),
    ({"parent": 0, "action": "split i by " + "9" * 400}, 400, "too long"),
    ({"parent": 0}, 400, "action is required"),
    ({"parent": 9, "action": "split i by 4"}, 404, "has no step 9"),
    ({"parent": "x", "action": "split i by 4"}, 400, "parent must be a step index"),
    ({"parent": True, "action": "split i by 4"}, 400, "parent must be a step index"),
])
def test_illegal_or_malformed_steps_are_refused_and_change_nothing(data, status, reason):
    body = new_session()
    before = snapshot()
    r = post(Client(), f"/api/sessions/{body['id']}/steps", data, token=body["owner_token"])
    assert r.status_code == status, r.content
    assert reason in r.json()["error"]
    assert snapshot() == before


def test_interchange_refusal_names_the_reason():
    body = new_session()
    r = post(Client(), f"/api/sessions/{body['id']}/steps", {"parent": 0, "action": "interchange i k"},
             token=body["owner_token"])
    err = r.json()["error"]
    assert err.startswith("'interchange i k' is not legal at step 0: ") and len(err) > 40


def test_stored_ir_is_never_trusted():
    """Tampering with a stored step's IR does not change what the next step replays from."""
    body = new_session()
    sid, token = body["id"], body["owner_token"]
    post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, token=token)
    Step.objects.filter(session_id=sid, index=1).update(ir="garbage")
    r = post(Client(), f"/api/sessions/{sid}/steps", {"parent": 1, "action": "split i1 by 8"}, token=token)
    assert r.status_code == 201 and "for i10 in 0..4:" in r.json()["ir"]
    acts = Client().get(f"/api/sessions/{sid}/actions?step=1").json()["actions"]
    assert {"text": "split i1 by 8", "kind": "split"} in acts


# ============================================================================ ownership

def test_non_owner_gets_403_and_nothing_changes():
    body = new_session()
    sid = body["id"]
    other_token = new_session()["owner_token"]
    before = snapshot()
    for client, token in ((Client(), None), (Client(), "pdo_wrong"), (Client(), other_token)):
        r = post(client, f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, token=token)
        assert r.status_code == 403 and "only the owner" in r.json()["error"] and "fork" in r.json()["error"]
        r = post(client, f"/api/sessions/{sid}/current", {"step": 0}, token=token)
        assert r.status_code == 403
        r = post(client, f"/api/sessions/{sid}/steps/0/benchmark", {"runner": None}, token=token)
        assert r.status_code == 403
    assert snapshot() == before


def test_bad_authorization_headers():
    c = Client()
    r = c.post("/api/sessions", json.dumps({"kernel": "matmul"}), content_type="application/json",
               HTTP_AUTHORIZATION="Bearer abc")
    assert r.status_code == 401 and "Token" in r.json()["error"]
    r = post(c, "/api/sessions", {"kernel": "matmul"}, token="pdk_revoked-or-unknown")
    assert r.status_code == 401 and "unknown or revoked API token" in r.json()["error"]
    r = post(c, "/api/sessions", {"kernel": "matmul"}, token="something")
    assert r.status_code == 401
    assert Session.objects.count() == 0


def test_user_api_token_owns_sessions():
    user = get_user_model().objects.create_user("alice", password="pw-alice-123")
    _, raw = ApiToken.issue(user, "agent")
    body = new_session(token=raw)
    assert "owner_token" not in body
    s = Session.objects.get(id=body["id"])
    assert s.owner == user
    r = post(Client(), f"/api/sessions/{s.id}/steps", {"parent": 0, "action": "split i by 32"}, token=raw)
    assert r.status_code == 201
    bob = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    _, bob_raw = ApiToken.issue(bob)
    r = post(Client(), f"/api/sessions/{s.id}/steps", {"parent": 0, "action": "split j by 32"}, token=bob_raw)
    assert r.status_code == 403
    data = Client().get(f"/api/sessions/{s.id}", HTTP_AUTHORIZATION=f"Token {raw}").json()
    assert data["owner"] == "alice" and data["editable"] is True
    ApiToken.objects.filter(user=user).update(revoked=True)
    r = post(Client(), f"/api/sessions/{s.id}/steps", {"parent": 0, "action": "split j by 32"}, token=raw)
    assert r.status_code == 401


def test_tokens_endpoint_needs_a_signed_in_user():
    c = Client()
    assert post(c, "/api/tokens", {}).status_code == 401
    get_user_model().objects.create_user("carol", password="pw-carol-123")
    c = Client(enforce_csrf_checks=True)
    c.login(username="carol", password="pw-carol-123")
    r = post(c, "/api/tokens", {"note": "x"})
    assert r.status_code == 403 and "CSRF" in r.json()["error"]      # cookie auth needs the CSRF token
    c.get("/")                                                        # sets the csrftoken cookie
    r = post(c, "/api/tokens", {"note": "x"}, HTTP_X_CSRFTOKEN=c.cookies["csrftoken"].value)
    assert r.status_code == 201 and r.json()["token"].startswith("pdk_")
    assert ApiToken.user_for(r.json()["token"]).username == "carol"


def test_browser_session_cookie_owns_anonymous_sessions_and_needs_csrf():
    c = Client(enforce_csrf_checks=True)
    c.get("/")
    csrf = c.cookies["csrftoken"].value
    r = c.post("/new", {"kernel": "matmul", "csrfmiddlewaretoken": csrf})
    assert r.status_code == 302
    sid = r["Location"].split("/")[2]
    # the same browser extends it through the API with the CSRF header...
    r = post(c, f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, HTTP_X_CSRFTOKEN=csrf)
    assert r.status_code == 201
    # ...but not without it
    r = post(c, f"/api/sessions/{sid}/steps", {"parent": 1, "action": "split j by 32"})
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    assert Step.objects.filter(session_id=sid).count() == 2


def test_current_pointer_moves_for_undo_and_branch():
    body = new_session()
    sid, token = body["id"], body["owner_token"]
    post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, token=token)
    r = post(Client(), f"/api/sessions/{sid}/current", {"step": 0}, token=token)
    assert r.status_code == 200 and r.json()["current"] == 0
    assert post(Client(), f"/api/sessions/{sid}/current", {"step": 5}, token=token).status_code == 404
    assert post(Client(), f"/api/sessions/{sid}/current", {}, token=token).status_code == 400
    r = post(Client(), f"/api/sessions/{sid}/steps", {"action": "split j by 16"}, token=token)
    assert r.json()["parent"] == 0


# ============================================================================ fork, export, import

def test_fork_copies_the_tree_for_a_new_owner():
    body = new_session()
    sid, token = body["id"], body["owner_token"]
    post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 32"}, token=token)
    post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "interchange i j"}, token=token)
    r = post(Client(), f"/api/sessions/{sid}/fork", {"step": 1})
    assert r.status_code == 201
    fork = r.json()
    assert fork["id"] != sid and fork["forked_from"] == sid and fork["current"] == 1 and fork["owner_token"]
    a = Client().get(f"/api/sessions/{sid}").json()["steps"]
    b = Client().get(f"/api/sessions/{fork['id']}").json()["steps"]
    assert [(s["id"], s["parent"], s["text"], s["ir"]) for s in a] == [(s["id"], s["parent"], s["text"], s["ir"]) for s in b]
    assert Session.objects.get(id=fork["id"]).forked_from_id == sid
    # the fork's owner can extend it, the original's owner cannot
    r = post(Client(), f"/api/sessions/{fork['id']}/steps", {"action": "split i1 by 4"}, token=fork["owner_token"])
    assert r.status_code == 201 and r.json()["parent"] == 1
    assert post(Client(), f"/api/sessions/{fork['id']}/steps", {"action": "split j by 4"}, token=token).status_code == 403
    assert Step.objects.filter(session_id=sid).count() == 3


def test_export_import_round_trip():
    body = new_session()
    sid, token = body["id"], body["owner_token"]
    for parent, action in ((0, "split i by 32"), (1, "split j by 32"), (0, "interchange i j")):
        assert post(Client(), f"/api/sessions/{sid}/steps", {"parent": parent, "action": action},
                    token=token).status_code == 201
    export = Client().get(f"/api/sessions/{sid}/export").json()
    assert export["format"] == "perfdojo-history" and export["version"] == 1 and len(export["steps"]) == 4
    r = post(Client(), "/api/sessions/import", export)
    assert r.status_code == 201, r.content
    new = r.json()
    assert new["id"] != sid and new["steps"] == 4 and new["warnings"] == []
    again = Client().get(f"/api/sessions/{new['id']}/export").json()
    for key in ("kernel", "source", "sizes", "current", "steps"):
        assert again[key] == export[key], key
    # a download names the file
    r = Client().get(f"/api/sessions/{sid}/export?download=1")
    assert "attachment" in r["Content-Disposition"]


def test_import_replays_and_refuses_illegal_histories():
    body = new_session()
    export = Client().get(f"/api/sessions/{body['id']}/export").json()
    before = snapshot()
    bad = dict(export, steps=export["steps"] + [{"index": 1, "parent": 0, "text": "interchange i k"}])
    r = post(Client(), "/api/sessions/import", bad)
    assert r.status_code == 400 and "steps[1] 'interchange i k' is not legal after step 0" in r.json()["error"]
    for broken, reason in (
            (dict(export, steps=export["steps"] + [{"index": 5, "parent": 0, "text": "split i by 2"}]), "index must be 1"),
            (dict(export, steps=export["steps"] + [{"index": 1, "parent": 1, "text": "split i by 2"}]), "earlier step"),
            (dict(export, source=BAD_SOURCE), "<source>:6:10"),
            (dict(export, format="other"), "format must be"),
            (dict(export, version=9), "unsupported history version"),
            (dict(export, steps=[]), "non-empty list"),
            (dict(export, steps=[{"index": 0, "parent": None, "text": "split i by 2"}]), "must be the root"),
            ({"steps": []}, "source")):
        r = post(Client(), "/api/sessions/import", broken)
        assert r.status_code == 400 and reason in r.json()["error"], (reason, r.json())
    assert snapshot() == before


def test_import_keeps_the_replayed_ir_over_the_files():
    body = new_session()
    post(Client(), f"/api/sessions/{body['id']}/steps", {"parent": 0, "action": "split i by 32"},
         token=body["owner_token"])
    export = Client().get(f"/api/sessions/{body['id']}/export").json()
    export["steps"][1]["ir"] = "kernel evil()\n"
    r = post(Client(), "/api/sessions/import", export)
    assert r.status_code == 201 and "differs from the replay" in r.json()["warnings"][0]
    assert "for i0 in" in Step.objects.get(session_id=r.json()["id"], index=1).ir


# ============================================================================ benchmark

def test_benchmark_without_runners_app_is_503(monkeypatch):
    body = new_session()
    monkeypatch.setattr(integration, "_services", lambda: None)
    r = post(Client(), f"/api/sessions/{body['id']}/steps/0/benchmark", {"runner": None}, token=body["owner_token"])
    assert r.status_code == 503 and r.json()["error"] == "benchmarking not available yet"


def test_benchmark_with_no_runner_online_is_409(memory_broker):
    body = new_session()
    r = post(Client(), f"/api/sessions/{body['id']}/steps/0/benchmark", {"runner": None}, token=body["owner_token"])
    assert r.status_code == 409 and "no runner is online" in r.json()["error"]


def test_benchmark_queues_a_job_for_the_step(memory_broker):
    from webapp.runners import protocol as runner_protocol
    from webapp.runners.models import Job, RegistrationToken
    _, raw = RegistrationToken.issue(note="test", uses=1)
    runner_protocol.register(raw, "r1", ["cpu"], {"cpu": {"arch": "x86_64", "model": "Test CPU"}}, {})
    body = new_session(kernel="matmul", sizes={"N": 32, "M": 32, "K": 32})
    sid, token = body["id"], body["owner_token"]
    post(Client(), f"/api/sessions/{sid}/steps", {"parent": 0, "action": "split i by 8"}, token=token)
    r = post(Client(), f"/api/sessions/{sid}/steps/1/benchmark", {"runner": "r1"}, token=token)
    assert r.status_code == 202, r.content
    job = Job.objects.get(id=r.json()["job"])
    assert job.session_id == sid and job.step_index == 1 and job.steps == ["split i by 8"]
    assert job.sizes == {"N": 32, "M": 32, "K": 32} and job.kernel == "matmul"
    assert job.work.get("flops") == 2 * 32 ** 3                 # the library kernel was recognised
    # its result shows up in the session's history
    runner = job.runner
    runner_protocol.claim(runner, job.id)
    runner_protocol.report(runner, job.id, 1, "done", {"median_s": 2e-3, "min_s": 1.9e-3, "max_s": 2.2e-3,
                                                        "verified": True})
    steps = Client().get(f"/api/sessions/{sid}").json()["steps"]
    assert steps[1]["results"][0]["state"] == "done" and steps[1]["results"][0]["result"]["median_s"] == 2e-3
    # refusals
    assert post(Client(), f"/api/sessions/{sid}/steps/9/benchmark", {}, token=token).status_code == 404
    r = post(Client(), f"/api/sessions/{sid}/steps/1/benchmark", {"runner": 5}, token=token)
    assert r.status_code == 400
    r = post(Client(), f"/api/sessions/{sid}/steps/1/benchmark", {"runner": "gpu-h100"}, token=token)
    assert r.status_code == 409 and "no online runner matches 'gpu-h100'" in r.json()["error"]


# ============================================================================ discovery

def test_openapi_describes_every_endpoint():
    r = Client().get("/api/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"].startswith("3.")
    for path in ("/api/sessions", "/api/sessions/{id}", "/api/sessions/{id}/actions", "/api/sessions/{id}/steps",
                 "/api/sessions/{id}/steps/{n}/benchmark", "/api/sessions/{id}/export", "/api/sessions/import",
                 "/api/sessions/{id}/fork", "/api/jobs/{job}", "/api/runners"):
        assert path in doc["paths"], path


def test_kernels_endpoint():
    names = [k["name"] for k in Client().get("/api/kernels").json()["kernels"]]
    assert names == kernels.list_kernels()


def test_openapi_covers_every_api_route():
    """Each /api/ route of the URL configuration is described, and each described path resolves."""
    import re

    from django.urls import get_resolver, resolve

    def walk(patterns):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                yield from walk(p.url_patterns)
            elif str(p.pattern).startswith("^api") and p.name != "api-not-found":
                yield p.name

    doc = Client().get("/api/openapi.json").json()
    described = set()
    for path in doc["paths"]:
        concrete = re.sub(r"\{target\}", "c", re.sub(r"\{(job|n|run)\}", "1", path))
        concrete = re.sub(r"\{(id|name)\}", "abc", concrete)
        described.add(resolve(concrete).url_name)
    routes = set(walk(get_resolver().url_patterns))
    assert routes - described == set(), "routes missing from /api/openapi.json"
    assert "api-not-found" not in described
    assert {"post"} <= set(doc["paths"]["/api/jobs"]) and "post" in doc["paths"]["/api/jobs/{job}/cancel"]
    new_session = doc["components"]["schemas"]["NewSession"]
    assert len(new_session["oneOf"]) == 2

"""The pages: gallery, paste with located checker messages, the editor and its
htmx partials, apply/undo/branch/fork, diffs and compare, downloads, export/import,
benchmark panel, runners page, accounts, CSRF and ownership on every form."""
from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dojo_core import kernels
from webapp.histories import engine, integration, services
from webapp.histories.models import Session, Step

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
BAD = "kernel shift(N = 4)\nin  A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i + 1]\n"


def start(client, kernel="matmul"):
    r = client.post("/new", {"kernel": kernel})
    assert r.status_code == 302, r.content
    return r["Location"].split("/")[2]


def apply(client, sid, parent, action, **extra):
    return client.post(f"/s/{sid}/apply", {"parent": parent, "action": action}, **extra)


def applied_to_new(action, **extra):
    """(client, session id, the answer) of ``action`` applied at step 0 of a new matmul history."""
    c = Client()
    sid = start(c)
    return c, sid, apply(c, sid, 0, action, **extra)


# ============================================================================ gallery

def test_gallery_lists_kernels_with_sizes_flops_and_new_session_buttons():
    r = Client().get("/")
    assert r.status_code == 200
    html = r.content.decode()
    for name in kernels.list_kernels():
        assert f'id="kernel-{name}"' in html and f"<code>{name}</code>" in html
    assert "N=512, M=512, K=512" in html                  # matmul sizes
    assert "268 MFLOP" in html                            # 2 * 512^3
    assert html.count('name="kernel"') == len(kernels.list_kernels())
    assert "csrfmiddlewaretoken" in html
    assert "htmx-2.0.11.min.js" in html and "htmx-ext-ws-2.0.4.min.js" in html


def test_vendored_htmx_is_served():
    c = Client()
    for path in ("/static/vendor/htmx-2.0.11.min.js", "/static/vendor/htmx-ext-ws-2.0.4.min.js",
                 "/static/js/dojo.js", "/static/css/pygments.css"):
        r = c.get(path)
        assert r.status_code == 200, path
        b"".join(r.streaming_content) if r.streaming else r.content


def test_new_session_from_kernel_redirects_to_the_editor():
    c = Client()
    sid = start(c)
    s = Session.objects.get(id=sid)
    assert s.kernel == "matmul" and s.owner is None and s.owner_key == c.session.session_key
    r = c.get("/")
    assert f"/s/{sid}/" in r.content.decode()             # "your sessions"


def test_unknown_kernel_is_refused_with_reason():
    r = Client().post("/new", {"kernel": "nope"})
    assert r.status_code == 400 and b"unknown kernel" in r.content
    assert Session.objects.count() == 0


def test_pasted_ir_errors_are_shown_at_their_line():
    r = Client().post("/new", {"source": BAD})
    assert r.status_code == 400
    html = r.content.decode()
    assert "The checker refused this kernel" in html
    # the error sits on line 6 of the editor, at column 10
    m = re.search(r'<div class="ol bad" data-line="6">(.*?)</div>', html, re.S)
    assert m and "6:10: A[i + 1] can be out of bounds" in m.group(1)
    assert "B[i] = A[i + 1]" in html                       # the source is kept for fixing
    assert Session.objects.count() == 0


def test_pasted_ir_htmx_returns_the_form_partial():
    r = Client().post("/new", {"source": "kernel x(\n"}, **HX)
    assert r.status_code == 400
    assert r.content.decode().lstrip().startswith('<form id="paste"')
    r = Client().post("/new", {"source": "kernel ok(N = 4)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i]\n"}, **HX)
    assert r.status_code == 204 and r["HX-Redirect"].startswith("/s/")


# ============================================================================ editor

def test_editor_renders_highlighted_ir_with_line_numbers_and_clickable_lines():
    c = Client()
    sid = start(c)
    r = c.get(f"/s/{sid}/")
    assert r.status_code == 200
    html = r.content.decode()
    assert '<span class="k">for</span>' in html                                  # Pygments tokens
    assert '<span class="no">7</span>' in html                                   # line numbers
    assert f'hx-get="/s/{sid}/actions?step=0&amp;at=i"' in html                   # loop header
    assert 'data-ref="s1"' in html                                               # statement line
    assert f'ws-connect="/ws/s/{sid}/"' in html
    assert 'id="undo-btn"' in html and "you own this history" in html
    assert "split i by 32" in html                                               # legal actions listed


def test_unknown_session_page_is_404():
    assert Client().get("/s/zzzzzzzzzz/").status_code == 404
    assert Client().get("/s/zzzzzzzzzz/actions").status_code == 404


def test_actions_partial_at_a_loop_is_grouped_by_kind_with_reasons():
    c = Client()
    sid = start(c)
    r = c.get(f"/s/{sid}/actions?step=0&at=k", **HX)
    assert r.status_code == 200
    html = r.content.decode()
    assert html.lstrip().startswith('<section id="actions" data-at="k">')
    assert "<h3>split <span" in html and "<h3>vectorize <span" in html
    assert 'data-action="split k by 32"' in html and 'data-action="split i by 32"' not in html
    assert "Not legal here" in html and "<code>parallelize k</code>:" in html   # the reason it is not
    assert 'id="free-action"' in html


def test_actions_partial_at_a_statement():
    c = Client()
    sid = start(c)
    html = c.get(f"/s/{sid}/actions?step=0&at=s0", **HX).content.decode()
    assert "(statement)" in html and 'data-action="fission j after s0"' in html


def test_apply_without_js_redirects_and_shows_the_diff():
    c, sid, r = applied_to_new("split i by 32")
    assert r.status_code == 302 and r["Location"] == f"/s/{sid}/?step=1"
    html = c.get(r["Location"]).content.decode()
    assert "Step 0 → step 1" in html
    assert 'class="change"' in html and "i0" in html
    assert '<li class="step current viewed on-path" id="tree-1"' in html


def test_apply_with_htmx_returns_the_editor_and_pushes_the_url():
    _, sid, r = applied_to_new("split i by 32", **HX)
    assert r.status_code == 200
    assert r["HX-Push-Url"] == f"/s/{sid}/?step=1"
    html = r.content.decode()
    assert html.lstrip().startswith('<div id="editor"') and 'data-step="1"' in html
    assert "<h2>Step 0 → step 1</h2>" in html


def test_apply_keeps_the_chosen_diff_tab():
    c = Client()
    sid = start(c)
    r = c.post(f"/s/{sid}/apply", {"parent": 0, "action": "split i by 32", "code": "c", "diff": "unified"}, **HX)
    html = r.content.decode()
    assert 'data-code="c" data-mode="unified"' in html and '<span class="n">i0</span>' in html
    assert '<table class="diff unified hl" data-code="c">' in html


def test_illegal_free_text_action_shows_the_reason():
    c, sid, r = applied_to_new("interchange i k", **HX)
    assert r.status_code == 400 and r["HX-Retarget"] == "#action-error"
    assert "is not legal at step 0" in r.content.decode()
    r = apply(c, sid, 0, "vectorize nothing")                  # without JS: the page with the reason
    assert r.status_code == 400
    html = r.content.decode()
    assert "there is no loop" in html and 'value="vectorize nothing"' in html
    assert Step.objects.filter(session_id=sid).count() == 1


def test_undo_moves_the_current_pointer_to_the_parent():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    r = c.post(f"/s/{sid}/undo", {"step": 1})
    assert r.status_code == 302 and r["Location"] == f"/s/{sid}/?step=0"
    assert Session.objects.get(id=sid).current == 0
    assert Step.objects.filter(session_id=sid).count() == 2      # nothing is deleted
    r = c.post(f"/s/{sid}/undo", **HX)                          # at the root it stays there
    assert r.status_code == 200 and Session.objects.get(id=sid).current == 0


def test_branching_from_an_earlier_step_builds_a_tree():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    apply(c, sid, 1, "split j by 16")
    apply(c, sid, 0, "interchange i j")                          # a branch off the root
    r = c.post(f"/s/{sid}/goto", {"step": 2})
    assert r.status_code == 302 and Session.objects.get(id=sid).current == 2
    html = c.get(f"/s/{sid}/?step=3").content.decode()
    assert 'class="branches"' in html
    assert 'id="tree-3"' in html and 'id="tree-2"' in html
    assert '<li class="step viewed on-path" id="tree-3"' in html
    assert '<li class="step current" id="tree-2"' in html


def test_diff_partials_ir_c_cuda_split_and_unified():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    for code in ("ir", "c", "cuda"):
        for mode in ("split", "unified"):
            r = c.get(f"/s/{sid}/diff?a=0&b=1&code={code}&diff={mode}", **HX)
            assert r.status_code == 200
            html = r.content.decode()
            assert f'data-code="{code}" data-mode="{mode}"' in html
            assert f'<table class="diff {mode} hl"' in html, (code, mode)
            assert ('class="add"' in html or 'class="change"' in html)
    html = c.get(f"/s/{sid}/diff?a=1&b=1", **HX).content.decode()
    assert "No change in the IR" in html


def test_compare_any_two_steps():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    apply(c, sid, 1, "split j by 16")
    r = c.get(f"/s/{sid}/compare?a=0&b=2")
    assert r.status_code == 200
    html = r.content.decode()
    assert "Step 0 → step 2" in html and "<select name=\"a\">" in html
    assert c.get(f"/s/{sid}/compare?a=0&b=9").status_code == 404


def test_downloads_and_export():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    r = c.get(f"/s/{sid}/steps/1/download/c")
    assert r.status_code == 200 and r["Content-Disposition"] == f'attachment; filename="matmul-{sid}-step1.c"'
    assert b"i0" in r.content
    r = c.get(f"/s/{sid}/steps/1/download/cuda")
    assert r.status_code == 200 and r["Content-Disposition"].endswith('.cu"')
    r = c.get(f"/s/{sid}/export.json")
    assert r.status_code == 200 and "attachment" in r["Content-Disposition"]
    data = json.loads(r.content)
    assert [s["text"] for s in data["steps"]] == ["", "split i by 32"]


def test_import_form_round_trip():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    data = c.get(f"/s/{sid}/export.json").content
    from django.core.files.uploadedfile import SimpleUploadedFile
    r = c.post("/import", {"file": SimpleUploadedFile("h.json", data, content_type="application/json")})
    assert r.status_code == 302
    new = r["Location"].split("/")[2]
    assert new != sid and Step.objects.filter(session_id=new).count() == 2
    r = c.post("/import", {"file": SimpleUploadedFile("h.json", b"{nope", content_type="application/json")})
    assert r.status_code == 400 and b"not a JSON history" in r.content


# ============================================================================ ownership on the pages

def test_others_see_a_read_only_history_with_a_fork_button():
    owner = Client()
    sid = start(owner)
    apply(owner, sid, 0, "split i by 32")
    other = Client()
    html = other.get(f"/s/{sid}/").content.decode()
    assert "read-only" in html and 'id="fork-btn"' in html
    assert 'id="undo-btn"' not in html and 'id="free-action"' not in html
    assert f'action="/s/{sid}/apply"' not in html and "fork it to apply actions" in html
    before = list(Step.objects.values_list("session_id", "index", "text"))
    for url, data in ((f"/s/{sid}/apply", {"parent": 1, "action": "split j by 8"}),
                      (f"/s/{sid}/undo", {}), (f"/s/{sid}/goto", {"step": 0}),
                      (f"/s/{sid}/steps/1/benchmark", {"runner": ""})):
        r = other.post(url, data)
        assert r.status_code == 403 and b"only the owner" in r.content, url
    assert list(Step.objects.values_list("session_id", "index", "text")) == before
    assert Session.objects.get(id=sid).current == 1


def test_anonymous_fork_becomes_the_forkers_own():
    owner = Client()
    sid = start(owner)
    apply(owner, sid, 0, "split i by 32")
    other = Client()
    other.get(f"/s/{sid}/")
    r = other.post(f"/s/{sid}/fork", {"step": 1})
    assert r.status_code == 302
    new = r["Location"].split("/")[2]
    assert new != sid and Session.objects.get(id=new).forked_from_id == sid
    r = apply(other, new, 1, "split j by 8")
    assert r.status_code == 302
    assert Step.objects.filter(session_id=sid).count() == 2 and Step.objects.filter(session_id=new).count() == 3
    assert "you own this history" in other.get(f"/s/{new}/").content.decode()
    assert apply(owner, new, 1, "split j by 16").status_code == 403


def test_forms_need_csrf():
    c = Client(enforce_csrf_checks=True)
    c.get("/")
    assert c.post("/new", {"kernel": "matmul"}).status_code == 403
    csrf = c.cookies["csrftoken"].value
    r = c.post("/new", {"kernel": "matmul", "csrfmiddlewaretoken": csrf})
    assert r.status_code == 302
    sid = r["Location"].split("/")[2]
    for url, data in ((f"/s/{sid}/apply", {"parent": 0, "action": "split i by 32"}), (f"/s/{sid}/undo", {}),
                      (f"/s/{sid}/fork", {}), ("/import", {"json": "{}"}), ("/accounts/signup/", {})):
        assert c.post(url, data).status_code == 403, url
    assert Step.objects.filter(session_id=sid).count() == 1 and Session.objects.count() == 1
    # htmx sends the token in a header
    r = c.post(f"/s/{sid}/apply", {"parent": 0, "action": "split i by 32"}, HTTP_X_CSRFTOKEN=csrf, **HX)
    assert r.status_code == 200


# ============================================================================ accounts

def test_signup_login_logout_and_adoption_of_anonymous_sessions():
    c = Client()
    sid = start(c)
    r = c.get("/accounts/signup/")
    assert r.status_code == 200 and b"csrfmiddlewaretoken" in r.content
    r = c.post("/accounts/signup/", {"username": "dana", "password1": "a-long-pass-9", "password2": "a-long-pass-9"})
    assert r.status_code == 302
    user = get_user_model().objects.get(username="dana")
    assert Session.objects.get(id=sid).owner == user                 # adopted
    assert "dana" in c.get("/").content.decode()
    assert apply(c, sid, 0, "split i by 32").status_code == 302
    r = c.post("/accounts/logout/")
    assert r.status_code == 302
    assert apply(c, sid, 1, "split j by 32").status_code == 403       # logged out: not the owner any more
    r = c.post("/accounts/login/", {"username": "dana", "password": "wrong"})
    assert r.status_code == 200 and Session.objects.get(id=sid).owner == user
    r = c.post("/accounts/login/", {"username": "dana", "password": "a-long-pass-9"})
    assert r.status_code == 302
    assert apply(c, sid, 1, "split j by 32").status_code == 302


def test_login_adopts_sessions_started_while_anonymous():
    get_user_model().objects.create_user("erin", password="erin-pass-123")
    c = Client()
    sid = start(c)
    r = c.post("/accounts/login/", {"username": "erin", "password": "erin-pass-123"})
    assert r.status_code == 302
    assert Session.objects.get(id=sid).owner.username == "erin"


def test_bad_signup_shows_errors():
    r = Client().post("/accounts/signup/", {"username": "x", "password1": "a", "password2": "b"})
    assert r.status_code == 400 and get_user_model().objects.count() == 0


def test_account_page_makes_api_tokens():
    get_user_model().objects.create_user("finn", password="finn-pass-123")
    c = Client()
    assert c.get("/accounts/").status_code == 302
    c.login(username="finn", password="finn-pass-123")
    r = c.post("/accounts/", {"note": "my agent"}, follow=True)
    assert r.status_code == 200 and r.redirect_chain == [("/accounts/", 302)]
    token = re.search(r"<code>(pdk_[^<]+)</code>", r.content.decode()).group(1)
    r = Client().post("/api/sessions", json.dumps({"kernel": "relu"}), content_type="application/json",
                      HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 201 and Session.objects.get(id=r.json()["id"]).owner.username == "finn"


# ============================================================================ benchmarks on the pages

def test_benchmark_panel_without_runners_app(monkeypatch):
    monkeypatch.setattr(integration, "_services", lambda: None)
    c = Client()
    sid = start(c)
    html = c.get(f"/s/{sid}/").content.decode()
    assert "benchmarking not available yet" in html and 'id="bench-form"' not in html
    r = c.post(f"/s/{sid}/steps/0/benchmark", {"runner": ""}, **HX)
    assert r.status_code == 503 and r["HX-Retarget"] == "#bench-message"
    assert Client().get("/runners/").status_code == 200


def _register_runner(name="r1"):
    from webapp.runners import protocol as rs
    from webapp.runners.models import RegistrationToken
    _, raw = RegistrationToken.issue(note="test", uses=1)
    rs.register(raw, name, ["cpu"], {"cpu": {"arch": "x86_64", "model": "Test CPU", "cores": 4}}, {})


def test_benchmark_from_the_page_and_results_with_speedup(memory_broker):
    from webapp.runners import protocol as rs
    from webapp.runners.models import Job, Runner
    _register_runner()
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    html = c.get(f"/s/{sid}/").content.decode()
    assert 'id="bench-form"' in html and '<option value="r1">r1 (idle)</option>' in html
    r = c.post(f"/s/{sid}/steps/0/benchmark", {"runner": ""}, **HX)
    assert r.status_code == 200 and 'id="bench-results"' in r.content.decode()
    r = c.post(f"/s/{sid}/steps/1/benchmark", {"runner": "r1"})
    assert r.status_code == 302
    runner = Runner.objects.get(name="r1")
    for job, median in zip(Job.objects.filter(session_id=sid).order_by("step_index"), (0.04, 0.01)):
        rs.claim(runner, job.id)
        # the step's job times the root in the same run (options.baseline)
        baseline = {"baseline": {"median_s": 0.04}} if job.options.get("baseline") else {}
        rs.report(runner, job.id, 1, "done", {"median_s": median, "min_s": median * 0.9, "max_s": median * 1.2,
                                              "verified": True, **baseline})
    html = c.get(f"/s/{sid}/?step=1").content.decode()
    assert "4.00×" in html                                     # speedup over the root on r1
    assert "Test CPU · 4 cores" in html                        # hardware
    assert "<svg" in html and "speedup over steps" in html     # the plot
    assert "min 9.00 ms, max 12.00 ms" in html                 # spread: min and max
    assert 'id="t-1"' in html and "10.00 ms" in html           # the tree badge
    # the gallery shows the best known speedup of matmul
    assert "4.00× on r1" in c.get("/").content.decode()
    # and the runners page lists the runner and its jobs
    html = c.get("/runners/").content.decode()
    assert "<b>r1</b>" in html and "Test CPU" in html and f"{sid}#1" in html


def test_job_update_html_is_out_of_band_swaps():
    from webapp.histories.views.bench import job_update_html
    c = Client()
    sid = start(c)
    session = Session.objects.get(id=sid)
    html = job_update_html(session, {"id": 5, "state": "running", "step_index": 0, "session_id": sid,
                                     "runner": "r9", "result": None})
    assert '<section id="bench-results" class="panel wide" hx-swap-oob="true">' in html
    assert 'id="job-5"' in html and "running" in html
    assert '<span class="badge" id="t-0" hx-swap-oob="true">' in html and "measuring" in html


def test_engine_version_change_rechecks_the_history():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    Session.objects.filter(id=sid).update(engine_version="old")
    html = c.get(f"/s/{sid}/").content.decode()
    assert "replaying it with" not in html                            # it replays the same: no banner
    assert Session.objects.get(id=sid).engine_version == engine.ENGINE_VERSION
    Step.objects.filter(session_id=sid, index=1).update(text="split q by 32")
    Session.objects.filter(id=sid).update(engine_version="old")
    html = c.get(f"/s/{sid}/").content.decode()
    assert "replaying it with" in html and "no longer applies" in html


def test_recheck_reports_changed_ir():
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "split i by 32")
    Step.objects.filter(session_id=sid, index=1).update(ir="stale")
    problems = services.recheck(Session.objects.get(id=sid))
    assert problems == ["step 1 'split i by 32' now gives a different IR"]


def test_new_session_at_other_sizes_from_the_gallery_form():
    c = Client()
    r = c.post("/new", {"kernel": "matmul", "size_N": "64", "size_M": "32", "size_K": "16"})
    assert r.status_code == 302
    s = Session.objects.get(id=r["Location"].split("/")[2])
    assert s.sizes == {"N": 64, "M": 32, "K": 16}
    assert c.post("/new", {"kernel": "matmul", "size_N": "-3"}).status_code == 400
    assert c.post("/new", {"kernel": "matmul", "size_Q": "3"}).status_code == 400
    assert Session.objects.count() == 1

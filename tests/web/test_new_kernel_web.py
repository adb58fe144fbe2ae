"""Writing kernels: the "new kernel" page (linked from every page's header and the
gallery, which no longer holds the paste box), the checker's messages at their lines in
its highlighting editor, a check without a session, the session titled by the kernel's
name (pages and API), and a session's root at other sizes as a new session."""
from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from dojo_core import kernels
from webapp.histories.models import Session

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
BAD = "kernel shift(N = 4)\nin  A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i + 1]\n"
GOOD = BAD.replace("A[i + 1]", "A[i]")
FIXED = "kernel copy8(N = 8)\nin  A: f32[8]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i]\n"


def test_new_kernel_page_has_the_editor_and_every_page_links_it():
    c = Client()
    html = c.get("/new").content.decode()
    assert 'id="source-overlay"' in html and 'id="source-gutter"' in html and "js/kernel-editor.js" in html
    assert 'wrap="off"' in html and 'spellcheck="false"' in html
    sid = c.post("/new", {"kernel": "relu"})["Location"].split("/")[2]
    for url in ("/", "/new", f"/s/{sid}/", "/runners/", "/kernels/relu/", "/accounts/login/", "/api/docs"):
        page = c.get(url).content.decode()
        assert '<a href="/new" id="new-kernel-link"' in page, url
    gallery = c.get("/").content.decode()
    assert 'id="new-kernel-cta"' in gallery and 'id="paste"' not in gallery and 'name="source"' not in gallery


def test_checker_message_is_drawn_on_its_line_and_listed_with_its_place():
    r = Client().post("/new", {"source": BAD})
    assert r.status_code == 400 and Session.objects.count() == 0
    html = r.content.decode()
    lines = re.findall(r'<div class="ol( bad)?" data-line="(\d+)">', html)
    assert [no for bad, no in lines if bad] == ["6"] and len(lines) == 7
    assert '<div class="gl bad" data-line="6">6</div>' in html
    assert '<span class="inline-error" data-line="6" data-col="10">6:10: A[i + 1] can be out of bounds' in html
    assert '<a href="#source" class="goto-error" data-line="6" data-col="10">line 6, column 10</a>' in html
    assert '<span class="k">kernel</span>' in html and '<span class="nf">shift</span>' in html   # highlighted
    assert ">\nkernel shift(N = 4)\n" in html                                    # the text kept for fixing


def test_htmx_gets_the_form_back_and_a_syntax_error_is_located_too():
    r = Client().post("/new", {"source": "kernel x(\n"}, **HX)
    assert r.status_code == 400
    html = r.content.decode()
    assert html.lstrip().startswith('<form id="paste"') and 'class="goto-error" data-line="' in html


def test_check_only_checks():
    r = Client().post("/new", {"source": GOOD, "check": "1"}, **HX)
    assert r.status_code == 200 and Session.objects.count() == 0
    assert "The checker accepts <code>kernel shift</code> at sizes N=4." in r.content.decode()
    r = Client().post("/new", {"source": BAD, "check": "1"})
    assert r.status_code == 400 and Session.objects.count() == 0


def test_a_pasted_kernel_session_is_titled_by_its_name():
    c = Client()
    r = c.post("/new", {"source": GOOD})
    assert r.status_code == 302
    session = Session.objects.get(id=r["Location"].split("/")[2])
    assert session.name == "shift" and session.kernel == ""
    page = c.get(session.url).content.decode()
    assert '<span class="kernel">shift</span>' in page and "<title>shift · " in page
    assert "custom kernel" not in page
    r = Client().post("/api/sessions", json.dumps({"source": FIXED}), content_type="application/json")
    assert r.status_code == 201 and Session.objects.get(id=r.json()["id"]).name == "copy8"
    r = Client().post("/api/sessions", json.dumps({"source": FIXED, "title": "mine"}),
                      content_type="application/json")
    assert Session.objects.get(id=r.json()["id"]).name == "mine"


def test_sizes_start_a_new_session_checked_at_those_sizes():
    c = Client()
    sid = c.post("/new", {"source": FIXED})["Location"].split("/")[2]
    page = c.get(f"/s/{sid}/").content.decode()
    assert f'action="/s/{sid}/sizes"' in page and 'name="size_N" value="8"' in page
    r = c.post(f"/s/{sid}/sizes", {"size_N": "4"})
    assert r.status_code == 302
    new = Session.objects.get(id=r["Location"].split("/")[2])
    assert new.id != sid and new.sizes == {"N": 4} and new.name == "copy8"
    assert new.source.startswith("kernel copy8(N = 4)")
    assert Session.objects.get(id=sid).sizes == {"N": 8}                        # the old one stays
    # refused: out of bounds at N=16 (located), not an integer, past the limit; nothing made
    count = Session.objects.count()
    r = c.post(f"/s/{sid}/sizes", {"size_N": "16"})
    assert r.status_code == 400 and b"A[i] can be out of bounds" in r.content
    r = c.post(f"/s/{sid}/sizes", {"size_N": "16"}, **HX)
    assert r.status_code == 400 and r["HX-Retarget"] == "#sizes-error" and b"out of bounds" in r.content
    assert c.post(f"/s/{sid}/sizes", {"size_N": "four"}).status_code == 400
    assert c.post(f"/s/{sid}/sizes", {"size_N": "99999999"}).status_code == 400
    assert c.post(f"/s/{sid}/sizes", {"size_Q": "4"}).status_code == 400
    assert Session.objects.count() == count
    assert c.get(f"/s/{sid}/sizes").status_code == 405
    assert c.post("/s/zzzzzzzzzz/sizes", {"size_N": "4"}).status_code == 404


def test_sizes_of_a_library_kernel_session():
    c = Client()
    sid = c.post("/new", {"kernel": "matmul"})["Location"].split("/")[2]
    r = c.post(f"/s/{sid}/sizes", {"size_N": "64", "size_M": "32", "size_K": "16"}, **HX)
    assert r.status_code == 204
    new = Session.objects.get(id=r["HX-Redirect"].split("/")[2])
    assert new.kernel == "matmul" and new.sizes == {"N": 64, "M": 32, "K": 16}


def test_new_kernel_page_can_start_from_a_session_or_a_library_kernel():
    c = Client()
    sid = c.post("/new", {"source": FIXED})["Location"].split("/")[2]
    assert f'href="/new?from={sid}"' in c.get(f"/s/{sid}/").content.decode()
    page = c.get(f"/new?from={sid}").content.decode()
    assert ">\nkernel copy8(N = 8)\nin  A: f32[8]" in page
    page = c.get("/new?kernel=relu").content.decode()
    assert ">\n" + "\n".join(open(kernels.kernel_path("relu")).read().splitlines()[:2]) in page
    assert 'href="/new?kernel=relu"' in c.get("/").content.decode()
    for bad in ("/new?from=zzzzzzzzzz", "/new?kernel=nope", "/new?kernel=../etc", "/new?from=" + "x" * 500):
        r = c.get(bad)
        assert r.status_code == 200 and "</textarea>" in r.content.decode()
        assert re.search(r'required>\n</textarea>', r.content.decode()), bad

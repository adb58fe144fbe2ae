"""The API's page for people, /api/docs: /api/openapi.json rendered on the server, linked
from every page's header where the raw JSON was."""
from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_docs_page_shows_every_operation_of_the_description():
    c = Client()
    spec = c.get("/api/openapi.json").json()
    r = c.get("/api/docs")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/html")
    html = r.content.decode()
    assert "<h1>PerfDojo API" in html and 'href="/api/openapi.json"' in html
    for path, item in spec["paths"].items():
        for method in item:
            assert f'<span class="method m-{method}">{method.upper()}</span> <code>{path}</code>' in html, \
                (method, path)
    # the parts of one operation: parameters, body fields, answers, linked schemas
    op = html[html.index('id="post-api-sessions-id-steps"'):]
    op = op[:op.index("</article>")]
    assert "<code>action</code> <span class=\"req\">required</span>" in op
    assert '<a href="#schema-Step"><code>Step</code></a>' in op and "<code>403</code>" in op
    assert 'id="schema-NewSession"' in html and "<code>Step | " not in html
    assert c.get("/api/docs/").status_code == 200


def test_docs_page_answers_other_methods_in_json():
    r = Client().post("/api/docs")
    assert r.status_code == 405 and r.json()["error"].startswith("method POST not allowed")
    assert r["Allow"] == "GET, HEAD"


def test_header_links_the_docs_page_not_the_raw_json():
    for url in ("/", "/runners/", "/accounts/login/", "/api/docs", "/new"):
        html = Client().get(url).content.decode()
        header = html[html.index('<header class="top">'):html.index("</header>")]
        assert '<a href="/api/docs" id="api-docs-link">API</a>' in header, url
        assert "openapi.json" not in header, url

"""The home page (the gallery) and the ASGI application."""
from __future__ import annotations

from webapp.histories import catalog


def test_home_page(client):
    r = client.get("/")
    assert r.status_code == 200
    assert b"<title>PerfDojo</title>" in r.content
    assert b"PerfDojo" in r.content


def test_home_lists_library_kernels(client):
    names = catalog.library_kernels()
    r = client.get("/")
    for name in names:
        assert f"<code>{name}</code>".encode() in r.content


def test_home_survives_a_broken_library(client, monkeypatch):
    import dojo_core.kernels as kernels

    def broken():
        raise RuntimeError("library unavailable")
    monkeypatch.setattr(kernels, "list_kernels", broken)
    assert catalog.library_kernels() == []
    r = client.get("/")
    assert r.status_code == 200 and b"No kernels in the library yet" in r.content


def test_static_css_is_served(client):
    r = client.get("/static/css/dojo.css")
    assert r.status_code == 200


def test_asgi_application_imports():
    from webapp.asgi import application
    assert application is not None

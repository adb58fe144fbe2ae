"""A quiet server log: the access log of ``make run`` (webapp/serve.py) has one line per
request a person or client made, and none for the runner protocol's heartbeats and job
traffic, the agents' progress pushes, static files or websocket connects, unless they
fail; Django logs warnings and errors (a refused request only in the access log)."""
from __future__ import annotations

import io
import logging

from django.conf import settings

from webapp import serve


def _log(events):
    stream = io.StringIO()
    log = serve.QuietAccessLog(stream)
    for protocol, action, details in events:
        log(protocol, action, {"client": "127.0.0.1:1", **details})
    return stream.getvalue().splitlines()


def test_background_traffic_leaves_no_line():
    lines = _log([
        ("http", "complete", {"method": "POST", "path": "/api/runners/heartbeat", "status": 200, "size": 74}),
        ("http", "complete", {"method": "POST", "path": "/api/runners/jobs/7/claim", "status": 200, "size": 9}),
        ("http", "complete", {"method": "POST", "path": "/api/runners/jobs/7/result", "status": 200, "size": 9}),
        ("http", "complete", {"method": "POST", "path": "/api/agents/3/notify", "status": 204, "size": 0}),
        ("http", "complete", {"method": "GET", "path": "/api/jobs/12", "status": 200, "size": 500}),
        ("http", "complete", {"method": "GET", "path": "/api/agents/3", "status": 200, "size": 500}),
        ("http", "complete", {"method": "GET", "path": "/static/css/dojo.css", "status": 200, "size": 900}),
        ("websocket", "connecting", {"path": "/ws/s/abc/"}),
        ("websocket", "connected", {"path": "/ws/s/abc/"}),
        ("websocket", "disconnected", {"path": "/ws/s/abc/"}),
    ])
    assert lines == []


def test_requests_people_make_and_failures_have_one_line_each():
    lines = _log([
        ("http", "complete", {"method": "GET", "path": "/s/abc/", "status": 200, "size": 1000}),
        ("http", "complete", {"method": "POST", "path": "/api/sessions", "status": 201, "size": 80}),
        ("http", "complete", {"method": "POST", "path": "/api/jobs/12/cancel", "status": 200, "size": 30}),
        ("http", "complete", {"method": "POST", "path": "/api/runners/heartbeat", "status": 403, "size": 20}),
        ("http", "complete", {"method": "GET", "path": "/static/nope.js", "status": 404, "size": 20}),
        ("websocket", "rejected", {"path": "/ws/s/zzz/"}),
    ])
    assert len(lines) == 6
    assert '"GET /s/abc/" 200 1000' in lines[0] and '"POST /api/runners/heartbeat" 403' in lines[3]
    assert "WSREJECT /ws/s/zzz/" in lines[5]


def test_kombus_no_hostname_warning_is_dropped_and_other_warnings_kept():
    not_noise = settings.LOGGING["filters"]["not_noise"]["callback"]
    record = logging.LogRecord("kombu.connection", logging.WARNING, "", 0, "No hostname was supplied. x", (), None)
    assert not not_noise(record)
    other = logging.LogRecord("kombu.connection", logging.WARNING, "", 0, "Connection lost", (), None)
    assert not_noise(other)


def test_django_logs_warnings_and_errors_only():
    assert settings.LOGGING["root"]["level"] == "WARNING"
    assert logging.getLogger("django.server").getEffectiveLevel() == logging.WARNING
    assert logging.getLogger("django.request").getEffectiveLevel() == logging.ERROR   # 4xx: the access line
    assert logging.getLogger("daphne").getEffectiveLevel() == logging.WARNING

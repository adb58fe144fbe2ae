"""A quiet server log: the access log of ``make run`` (webapp/serve.py) has one line per
request a person or client made, and none for the runner protocol's heartbeats and job
traffic, the agents' progress pushes, static files or websocket connects, unless they
fail; Django logs warnings and errors (a refused request only in the access log)."""
from __future__ import annotations

import io
import logging

from django.conf import settings

from webapp import serve


def _log(*events):
    """The access log's lines for ``events``: "METHOD PATH STATUS SIZE" (an HTTP request
    completed) or "websocket ACTION PATH"."""
    stream = io.StringIO()
    log = serve.QuietAccessLog(stream)
    for event in events:
        first, *rest = event.split()
        if first == "websocket":
            log("websocket", rest[0], {"client": "127.0.0.1:1", "path": rest[1]})
        else:
            path, status, size = rest
            log("http", "complete", {"client": "127.0.0.1:1", "method": first, "path": path,
                                     "status": int(status), "size": int(size)})
    return stream.getvalue().splitlines()


def test_background_traffic_leaves_no_line():
    lines = _log(
        "POST /api/runners/heartbeat 200 74",
        "POST /api/runners/jobs/7/claim 200 9",
        "POST /api/runners/jobs/7/result 200 9",
        "POST /api/agents/3/notify 204 0",
        "GET /api/jobs/12 200 500",
        "GET /api/agents/3 200 500",
        "GET /static/css/dojo.css 200 900",
        "websocket connecting /ws/s/abc/",
        "websocket connected /ws/s/abc/",
        "websocket disconnected /ws/s/abc/",
    )
    assert lines == []


def test_requests_people_make_and_failures_have_one_line_each():
    lines = _log(
        "GET /s/abc/ 200 1000",
        "POST /api/sessions 201 80",
        "POST /api/jobs/12/cancel 200 30",
        "POST /api/runners/heartbeat 403 20",
        "GET /static/nope.js 404 20",
        "websocket rejected /ws/s/zzz/",
    )
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

"""Driving a PerfDojo server from outside, as the end-to-end tests and the benchmarks do
with the one ``python -m webapp.launch`` starts: a free port to start it on, a JSON
request, and waiting until a condition on it holds.  Only the standard library."""
from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(method: str, url: str, data=None, timeout: float = 10, token: str | None = None) -> tuple[int, bytes]:
    """(status, body) of a request with a JSON body (``data``) and an optional API token;
    an HTTP error status is an answer here, not an exception."""
    body = None if data is None else json.dumps(data).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_until(cond, timeout: float, what: str, proc=None, details=lambda: "", interval: float = 0.1) -> None:
    """Return once ``cond()`` holds; an OSError from it (a server not answering yet)
    counts as not yet.  AssertionError "timed out waiting for WHAT" after ``timeout``
    seconds, or "server exited" as soon as the process ``proc`` has; ``details()`` (the
    server's log, say) follows the message."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"server exited ({proc.returncode})\n{details()}")
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}\n{details()}")

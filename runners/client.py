"""The runner's HTTP client for the server's runner protocol (JSON under /api/runners/).

Network errors and 5xx answers are retried with exponential backoff (0.2 s up
to 5 s) until ``patience`` seconds have passed (None: forever, or until the
``stop`` event is set), so a runner rides out a server restart or a network
loss.  A 4xx answer is final and raises ``Refused`` with the server's reason.

The client keeps its HTTP/1.1 connection alive between requests (one per client,
used under a lock); a kept-alive connection the server has closed meanwhile is
replaced, and the request sent again, once.
"""
from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse


class Refused(Exception):
    """The server answered 4xx; ``status`` and ``data`` (the JSON answer) say why.  Not a
    DojoError: a transport signal the runner daemon handles itself (logs, retries or exits 2)."""

    def __init__(self, status: int, data: dict):
        self.status, self.data = status, data
        super().__init__(f"HTTP {status}: {data.get('error') or data}")


class Unreachable(Exception):
    """The server could not be reached within the patience given.  Not a DojoError: a
    transport signal the runner daemon handles itself (logs, retries or exits 2)."""


class Client:
    def __init__(self, server: str, secret: str | None = None, timeout: float = 15.0,
                 stop: threading.Event | None = None):
        self.server = server.rstrip("/")
        self.secret = secret
        self.timeout = timeout
        self.stop = stop or threading.Event()
        self._url = urllib.parse.urlsplit(self.server)
        if self._url.scheme not in ("http", "https") or not self._url.hostname:
            raise ValueError(f"server: {server!r} is not an http(s):// URL")
        self._conn = None
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._url.scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self._url.hostname, self._url.port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _once(self, method: str, path: str, body) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "Host": self._url.netloc}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.secret:
            headers["Authorization"] = f"Bearer {self.secret}"
        with self._lock:
            for fresh in (False, True):
                reused = self._conn is not None
                conn = self._connection()
                try:
                    conn.request(method, self._url.path.rstrip("/") + path, body=data, headers=headers)
                    resp = conn.getresponse()
                    raw, status = resp.read(), resp.status
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                    self._conn = None
                    conn.close()
                    # the server closed a kept-alive connection before reading this request:
                    # send it once more on a new connection; anything else is the caller's
                    if reused and not fresh:
                        continue
                    raise ConnectionError(f"{type(exc).__name__}: {exc}") from None
                except (OSError, http.client.HTTPException):
                    self._conn = None
                    conn.close()
                    raise
                if resp.will_close:
                    self._conn = None
                    conn.close()
                break
        try:
            payload = json.loads(raw.decode() or "{}")
        except (ValueError, UnicodeDecodeError):
            payload = {"error": raw[:200].decode(errors="replace")}
        if not isinstance(payload, dict):
            payload = {"data": payload}
        return status, payload

    def request(self, method: str, path: str, body=None, patience: float | None = 60.0) -> dict:
        deadline = None if patience is None else time.monotonic() + patience
        delay = 0.2
        last = None
        while True:
            try:
                status, payload = self._once(method, path, body)
                if status < 400:
                    return payload
                if status < 500:
                    raise Refused(status, payload)
                last = f"HTTP {status}: {payload.get('error') or payload}"
            except (http.client.HTTPException, ConnectionError, TimeoutError, OSError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            if self.stop.is_set() or (deadline is not None and time.monotonic() + delay > deadline):
                raise Unreachable(f"{self.server}{path}: {last}")
            self.stop.wait(delay)
            delay = min(delay * 2, 5.0)

    # the protocol ---------------------------------------------------------------------------
    def register(self, token: str, name: str | None, labels, hardware: dict, sandbox: dict,
                 patience=120.0, secret: str | None = None, peaks: dict | None = None) -> dict:
        body = {"token": token, "name": name, "labels": list(labels or []),
                "hardware": hardware, "sandbox": sandbox}
        if secret:
            body["secret"] = secret
        if peaks:
            body["peaks"] = peaks
        return self.request("POST", "/api/runners/register", body, patience)

    def heartbeat(self, current_job=None, patience=10.0) -> dict:
        return self.request("POST", "/api/runners/heartbeat", {"current_job": current_job}, patience)

    def claim(self, job_id: int, attempt: int | None = None, patience=120.0) -> dict:
        body = {} if attempt is None else {"attempt": int(attempt)}
        return self.request("POST", f"/api/runners/jobs/{int(job_id)}/claim", body, patience)

    def result(self, job_id: int, attempt: int, state: str, result: dict, patience=None,
               claim: bool = False) -> dict:
        body = {"attempt": attempt, "state": state, "result": result}
        if claim:
            body["claim"] = True
        return self.request("POST", f"/api/runners/jobs/{int(job_id)}/result", body, patience)

    def release(self, job_id: int, reason: str, patience=15.0) -> dict:
        return self.request("POST", f"/api/runners/jobs/{int(job_id)}/release",
                            {"reason": reason}, patience)

    def bye(self, patience=5.0) -> dict:
        return self.request("POST", "/api/runners/bye", {}, patience)

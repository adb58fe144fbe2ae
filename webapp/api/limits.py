"""Request limits, before any view runs (RequestLimitsMiddleware, first in MIDDLEWARE).

Guarantees:

* Request headers larger than DOJO_MAX_HEADER_BYTES in all (names and values) are
  answered 431 with a JSON reason; no view runs.
* Writes (POST, PUT, PATCH, DELETE) are counted per client IP and per credential
  (the Authorization header, else the session cookie) in one-minute windows; past
  DOJO_RATE_WRITES_PER_MIN for either the answer is 429 with ``Retry-After`` (seconds
  to the window's end) and a JSON reason.  The runner protocol (/api/runners/..., whose
  heartbeats are frequent and authenticated by a runner secret) and the agents worker's
  signed progress pushes (/api/agents/RUN/notify) are not counted.  0 turns the write
  limit off.  Counts live in this process (the server is one process).
"""
from __future__ import annotations

import hashlib
import threading
import time

from django.conf import settings

from webapp.jsonapi import error

WRITES = ("POST", "PUT", "PATCH", "DELETE")
EXEMPT = ("/api/runners/", "/__test__/")
_lock = threading.Lock()
_counts: dict = {}          # (key, window) -> count


def reset() -> None:
    """Forget every count (tests)."""
    with _lock:
        _counts.clear()


def _header_bytes(meta) -> int:
    return sum(len(k) + len(str(v)) for k, v in meta.items() if k.startswith("HTTP_"))


def _keys(request) -> list:
    ip = request.META.get("REMOTE_ADDR") or "?"
    keys = [f"ip:{ip}"]
    cred = request.META.get("HTTP_AUTHORIZATION") or request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if cred:
        keys.append("cred:" + hashlib.sha256(cred.encode(errors="replace")).hexdigest()[:32])
    return keys


def hit(keys, limit: int, now: float | None = None) -> int:
    """0 when the request may go on (and is counted), else seconds until it may."""
    now = time.time() if now is None else now
    window = int(now // 60)
    with _lock:
        if len(_counts) > 100_000:
            for k in [k for k in _counts if k[1] < window]:
                del _counts[k]
        if any(_counts.get((k, window), 0) >= limit for k in keys):
            return max(1, int((window + 1) * 60 - now))
        for k in keys:
            _counts[(k, window)] = _counts.get((k, window), 0) + 1
    return 0


def _exempt(path: str) -> bool:
    return path.startswith(EXEMPT) or (path.startswith("/api/agents/") and path.rstrip("/").endswith("/notify"))


def _refuse(status: int, reason: str, retry: int | None = None):
    resp = error(status, reason)
    if retry:
        resp["Retry-After"] = str(retry)
    return resp


class RequestLimitsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        most = int(getattr(settings, "DOJO_MAX_HEADER_BYTES", 16384))
        size = _header_bytes(request.META)
        if size > most:
            return _refuse(431, f"request headers too large ({size} bytes, limit {most})")
        limit = int(getattr(settings, "DOJO_RATE_WRITES_PER_MIN", 240))
        if limit > 0 and request.method in WRITES and not _exempt(request.path):
            wait = hit(_keys(request), limit)
            if wait:
                return _refuse(429, f"too many requests (limit {limit} writes a minute per "
                                    f"client); retry in {wait} s", wait)
        return self.get_response(request)

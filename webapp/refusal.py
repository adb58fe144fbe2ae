"""The one error type of the web services: ``Refusal(status, reason, **extra)``.

A service raises it for anything it will not do (bad input, not the owner, unknown
object, a state conflict, a quota); nothing stored changes because of it.  The JSON
views (webapp/jsonapi.py) answer it as ``{"error": reason, **extra}`` with its HTTP
status, the pages as a small error page or an htmx flash.  It has no Django imports,
so every layer may raise it.
"""
from __future__ import annotations


class Refusal(Exception):
    """A refused request: an HTTP ``status`` (4xx, or 503), a one-line ``reason``, and
    ``extra`` JSON fields for the answer (``retry_after`` becomes a Retry-After header)."""

    def __init__(self, status: int, reason: str, **extra):
        super().__init__(reason)
        self.status, self.reason, self.extra = status, reason, extra

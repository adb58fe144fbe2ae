"""The one error type of the web services: ``Refusal(status, reason, **extra)``.

A service raises it for anything it will not do (bad input, not the owner, unknown
object, a state conflict, a quota); nothing stored changes because of it.  The JSON
views (webapp/jsonapi.py) answer it as ``{"error": reason, **extra}`` with its HTTP
status, the pages as a small error page or an htmx flash.  It has no Django imports,
so every layer may raise it.

A tool-chain error (any ``dojo_core`` ``DojoError``) that a service lets through is
answered by type, never by name: ``refusal_of(exc)`` is the Refusal with the status of
the first matching type in ``STATUS`` and ``str(exc)`` (unchanged) as the reason.
"""
from __future__ import annotations

from dojo_core import DojoError


class Refusal(Exception):
    """A refused request: an HTTP ``status`` (4xx, or 503), a one-line ``reason``, and
    ``extra`` JSON fields for the answer (``retry_after`` becomes a Retry-After header).
    Not a DojoError: the web layer's own answer, which carries its HTTP status."""

    def __init__(self, status: int, reason: str, **extra):
        super().__init__(reason)
        self.status, self.reason, self.extra = status, reason, extra


#: (type, HTTP status) of the tool-chain errors, most specific first: every DojoError is
#: the client's input refused (a kernel, steps, sizes, a target the tool chain rejects).
STATUS: tuple = ((DojoError, 400),)


def refusal_of(exc: DojoError) -> Refusal:
    """The Refusal answering a tool-chain error: its STATUS, ``str(exc)`` as the reason."""
    status = next(code for kind, code in STATUS if isinstance(exc, kind))
    return Refusal(status, str(exc))

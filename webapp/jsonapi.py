"""The JSON API helpers every app's JSON views use: one decorator, one error answer, one
body parser, one size limit.

Guarantees of a view decorated with ``json_view(*methods, before=None, csrf_exempt=True)``:

* with ``csrf_exempt`` it is exempt from Django's CSRF middleware (``before`` makes the
  checks it needs); without, the middleware answers a write that fails its check (403)
  before the method check;
* another method is answered 405 with ``Allow`` and a JSON reason, and the view never runs;
* a ``job_id`` URL argument arrives as an int; one past a 63-bit id is answered 404;
* ``before(request)``, when given, runs first: it may set attributes on the request,
  return a response (which is answered as it is), or raise a Refusal;
* a ``Refusal`` is answered ``{"error": reason, **extra}`` with its status (and
  ``Retry-After`` from ``retry_after``); a tool-chain ``DojoError`` is answered as
  ``refusal_of`` (webapp/refusal.py) says, its text unchanged; a ``ValueError`` (bad input
  in a service) is answered 400 with its message.  Nothing else is caught: a bug stays a 500.

``parse_body(request)`` is the body parser: the JSON object of the body, ``{}`` for an
empty one; a Refusal 413 past ``MAX_BODY`` bytes, 415 for another content type, 400
for bad JSON or anything that is not an object.
"""
from __future__ import annotations

import functools
import json

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views.decorators import csrf

from dojo_core import DojoError
from webapp.refusal import Refusal, refusal_of

MAX_BODY = 8 * 1024 * 1024          # a history import is the largest body
MAX_ID = (1 << 63) - 1
JSON_TYPES = ("application/json", "text/plain", "")


def error(status: int, reason: str, **extra) -> JsonResponse:
    """The JSON error answer: ``{"error": reason, **extra}`` with ``status``."""
    return JsonResponse({"error": reason, **extra}, status=status)


def refusal_response(r: Refusal) -> JsonResponse:
    extra = dict(r.extra)
    retry = extra.get("retry_after")
    resp = error(r.status, r.reason, **extra)
    if retry is not None:
        resp["Retry-After"] = str(int(retry))
    return resp


def parse_body(request) -> dict:
    """The request's JSON object body ({} when empty); a Refusal otherwise."""
    try:
        raw = request.body
    except RequestDataTooBig:
        raise Refusal(413, "request body too large") from None
    if len(raw) > MAX_BODY:
        raise Refusal(413, "request body too large")
    if not raw.strip():
        return {}
    ctype = request.content_type or ""
    if ctype not in JSON_TYPES and not ctype.endswith("+json"):
        raise Refusal(415, f"send JSON (Content-Type: application/json), not {ctype}")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refusal(400, f"bad JSON: {exc}") from None
    except RecursionError:
        raise Refusal(400, "bad JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise Refusal(400, "the body must be a JSON object")
    return data


def json_view(*methods, before=None, csrf_exempt=True):
    """Decorate a JSON view (see the module's guarantees)."""
    def wrap(view):
        @functools.wraps(view)
        def inner(request, *args, **kwargs):
            if request.method not in methods:
                resp = error(405, f"method {request.method} not allowed here (use {', '.join(methods)})")
                resp["Allow"] = ", ".join(methods)
                return resp
            if "job_id" in kwargs:
                kwargs["job_id"] = int(kwargs["job_id"])
                if kwargs["job_id"] > MAX_ID:
                    return error(404, f"no job {kwargs['job_id']}")
            try:
                if before is not None:
                    answer = before(request)
                    if answer is not None:
                        return answer
                return view(request, *args, **kwargs)
            except Refusal as r:
                return refusal_response(r)
            except DojoError as exc:
                return refusal_response(refusal_of(exc))
            except ValueError as exc:
                return error(400, str(exc))
        return csrf.csrf_exempt(inner) if csrf_exempt else inner
    return wrap

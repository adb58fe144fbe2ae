"""Who calls the JSON API, and the API's view decorator.

Guarantees of ``api(*methods)`` (webapp.jsonapi.json_view with ``authenticate``):

* ``request.dojo_actor`` is the caller: the user of an ``Authorization: Token pdk_...``
  API token, the holder of an anonymous session's owner token (``pdo_...``), or else
  the browser (its signed-in user and session); ``request.dojo_by_token`` says which.
* A malformed or unknown token is a 401 and the view never runs.
* A write (not GET, HEAD or OPTIONS) authenticated by the session cookie and not by a
  token must pass Django's CSRF check (X-CSRFToken), else 403; requests with neither a
  token nor a session cookie act anonymously.
"""
from __future__ import annotations

from django.middleware.csrf import CsrfViewMiddleware

from webapp.histories.actors import browser_actor, has_session_cookie
from webapp.histories.services import Actor
from webapp.jsonapi import error, json_view
from webapp.refusal import Refusal

from .models import ApiToken

SAFE = ("GET", "HEAD", "OPTIONS")


def _csrf_failure(request) -> bool:
    mw = CsrfViewMiddleware(lambda r: None)
    return mw.process_view(request, None, (), {}) is not None


def actor_of(request) -> tuple[Actor, bool]:
    """(actor, authenticated by token?) or a Refusal 401 for a bad Authorization header."""
    header = request.headers.get("Authorization", "")
    if not header:
        return browser_actor(request), False
    scheme, _, raw = header.partition(" ")
    raw = raw.strip()
    if scheme.lower() != "token" or not raw:
        raise Refusal(401, "Authorization must be 'Token <API token or owner token>'")
    if raw.startswith("pdk_"):
        user = ApiToken.user_for(raw)
        if user is None:
            raise Refusal(401, "unknown or revoked API token")
        return Actor(user=user), True
    if not raw.startswith("pdo_"):
        raise Refusal(401, "unknown token (API tokens start with pdk_, owner tokens with pdo_)")
    return Actor(token=raw), True


def authenticate(request):
    """Set ``request.dojo_actor`` and ``request.dojo_by_token``; a 403 answer when a
    cookie-authenticated write fails the CSRF check, else None."""
    actor, by_token = actor_of(request)
    if (request.method not in SAFE and not by_token and has_session_cookie(request)
            and _csrf_failure(request)):
        return error(403, "CSRF check failed: send the X-CSRFToken header with the "
                          "csrftoken cookie, or authenticate with 'Authorization: Token ...'")
    request.dojo_actor, request.dojo_by_token = actor, by_token
    return None


def api(*methods):
    """The JSON API's view decorator: ``json_view(*methods, before=authenticate)``."""
    return json_view(*methods, before=authenticate)

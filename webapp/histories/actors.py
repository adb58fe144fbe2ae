"""Who is asking: an ``Actor`` from a Django request (browser session, signed-in user,
``Authorization: Token ...`` header)."""
from __future__ import annotations

from django.conf import settings

from .services import OWNED_KEY, Actor

MAX_OWNED = 500


def has_session_cookie(request) -> bool:
    return settings.SESSION_COOKIE_NAME in request.COOKIES


def browser_actor(request, user=None, token: str = "") -> Actor:
    session = getattr(request, "session", None)
    owned = frozenset()
    key = ""
    if session is not None:
        owned = frozenset(x for x in session.get(OWNED_KEY, []) if isinstance(x, str))
        key = session.session_key or ""
    if user is None:
        user = getattr(request, "user", None)
    return Actor(user=user, session_key=key, owned=owned, token=token)


def ensure_session_key(request) -> str:
    """The browser session's key, creating the session if needed."""
    if not request.session.session_key:
        request.session.save()
    return request.session.session_key


def remember_owned(request, session_id: str) -> None:
    """Add a session id to the browser session's list of owned anonymous sessions."""
    owned = [x for x in request.session.get(OWNED_KEY, []) if x != session_id]
    owned.append(session_id)
    request.session[OWNED_KEY] = owned[-MAX_OWNED:]

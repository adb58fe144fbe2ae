"""The gallery ("/"): the kernel library with its best known speedups, this visitor's
sessions, a new session from a kernel or from pasted IR (the checker's messages shown at
their lines), and the import of an exported history."""
from __future__ import annotations

import json

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.jsonapi import MAX_BODY
from webapp.refusal import Refusal

from .. import services, transfer
from ..actors import browser_actor, ensure_session_key, remember_owned
from ..catalog import kernel_cards
from ..models import Session
from ..services import OWNED_KEY
from .common import client_redirect, refused

MAX_SIZE_DIGITS = 9


def gallery(request, paste_error=None, source="", status=200):
    ctx = {"cards": kernel_cards(), "paste": paste_context(source, paste_error)}
    ctx["kernels"] = [c["name"] for c in ctx["cards"]]
    ctx["my_sessions"] = _my_sessions(request)
    return render(request, "home.html", ctx, status=status)


def _my_sessions(request, limit=12):
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        qs = Session.objects.filter(owner=user)
    else:
        ids = [x for x in request.session.get(OWNED_KEY, []) if isinstance(x, str)]
        if not ids:
            return []
        qs = Session.objects.filter(id__in=ids, owner__isnull=True)
    return list(qs.order_by("-updated")[:limit])


def paste_context(source: str, error: Refusal | None) -> dict:
    """The pasted source with the checker's messages attached to their lines."""
    if error is None:
        return {"source": source, "errors": [], "lines": []}
    errors = error.extra.get("errors") or []
    by_line = {}
    for e in errors:
        by_line.setdefault(e["line"], []).append(e)
    lines = []
    for no, text in enumerate(source.replace("\r\n", "\n").split("\n"), start=1):
        lines.append({"no": no, "text": text, "errors": by_line.get(no, [])})
    # errors past the end (e.g. at EOF)
    n = len(lines)
    for line_no, errs in by_line.items():
        if line_no > n:
            lines.append({"no": line_no, "text": "", "errors": errs})
    return {"source": source, "message": error.reason, "errors": errors,
            "lines": lines if errors else []}


def _sizes(request, kernel) -> dict:
    """The ``size_NAME`` fields of the form, for a library kernel; a Refusal if one is not
    a positive integer."""
    sizes = {}
    for key, value in request.POST.items():
        if key.startswith("size_") and kernel is not None:
            if not value.strip().isdigit() or len(value.strip()) > MAX_SIZE_DIGITS:
                raise Refusal(400, f"size {key[5:]} must be a positive integer, not {value[:20]!r}")
            sizes[key[5:]] = int(value)
    return sizes


@require_POST
def new_session(request):
    """Start a session from a library kernel (kernel=NAME) or from pasted IR (source=TEXT)."""
    kernel = request.POST.get("kernel") or None
    source = request.POST.get("source")
    if kernel is None and source is None:
        return refused(request, Refusal(400, "give a kernel name or IR source"))
    try:
        sizes = _sizes(request, kernel)
    except Refusal as r:
        return refused(request, r)
    actor = browser_actor(request)
    if actor.user_id is None:
        actor.session_key = ensure_session_key(request)
    try:
        session, _token = services.create_session(actor, kernel=kernel, source=source if kernel is None else None,
                                                   sizes=sizes or None)
    except Refusal as r:
        if kernel is not None:
            return refused(request, r)
        if request.htmx:
            return render(request, "histories/_paste.html", {"paste": paste_context(source, r)}, status=r.status)
        return gallery(request, paste_error=r, source=source, status=r.status)
    if actor.user_id is None:
        remember_owned(request, session.id)
    if request.htmx:
        return client_redirect(session.url)
    return redirect(session.url)


def _history_of(request):
    """The exported history of the form: an uploaded file or pasted JSON; a Refusal when
    it is too large or not JSON."""
    upload = request.FILES.get("file")
    raw = upload.read(MAX_BODY + 1) if upload else (request.POST.get("json") or "").encode()
    if len(raw) > MAX_BODY:
        raise Refusal(413, "history file too large")
    try:
        return json.loads(raw or b"null")
    except RecursionError:
        raise Refusal(400, "not a JSON history: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refusal(400, f"not a JSON history: {exc}") from None


@require_POST
def import_session(request):
    """Import an exported history (a JSON file upload or pasted JSON)."""
    try:
        data = _history_of(request)
        actor = browser_actor(request)
        if actor.user_id is None:
            actor.session_key = ensure_session_key(request)
        session, _token, warnings = transfer.import_history(actor, data)
    except Refusal as r:
        return refused(request, r)
    if actor.user_id is None:
        remember_owned(request, session.id)
    for w in warnings:
        messages.warning(request, w)
    return redirect(session.url)

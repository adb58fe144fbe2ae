"""The gallery ("/"): the kernel library with its best known speedups, this visitor's
sessions and the import of an exported history; the "new kernel" page (``/new``): pasted
IR in a highlighting editor, checked (the checker's messages shown at their lines) and
started as a session titled by its kernel's name; a session's root at other sizes
(``/s/ID/sizes``), a new session checked like any other."""
from __future__ import annotations

import json

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from dojo_core import kernels
from webapp.jsonapi import MAX_BODY
from webapp.refusal import Refusal

from .. import engine, services, transfer
from ..actors import browser_actor, ensure_session_key, remember_owned
from ..catalog import kernel_cards
from ..models import Session
from ..services import OWNED_KEY
from .common import client_redirect, refused, session_or_404

MAX_SIZE_DIGITS = 9


def gallery(request):
    ctx = {"cards": kernel_cards()}
    ctx["kernels"] = [c["name"] for c in ctx["cards"]]
    ctx["my_sessions"] = _my_sessions(request)
    return render(request, "home.html", ctx)


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


def paste_context(source: str, error: Refusal | None, checked: tuple | None = None) -> dict:
    """The pasted source as highlighted lines, each with the checker's messages about it
    (a message past the last line gets a line of its own); ``checked``: the (name,
    sizes) of a source that passed the checker.  A source over the size limit comes back
    cut at the limit and not highlighted."""
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    too_large = len(source) > engine.MAX_SOURCE_BYTES
    source = source[:engine.MAX_SOURCE_BYTES]
    errors = (error.extra.get("errors") or []) if error is not None else []
    by_line = {}
    for e in errors:
        if isinstance(e.get("line"), int) and e["line"] >= 1:
            by_line.setdefault(e["line"], []).append(e)
    texts = source.split("\n")
    split = source.splitlines()             # the highlighter's lines: plain text unless the same
    html = engine.highlighted(source, "dojo") if split == texts[:len(split)] and not too_large else ()
    lines = []
    for no, text in enumerate(texts, start=1):
        lines.append({"no": no, "text": text, "html": html[no - 1] if no <= len(html) else None,
                      "errors": by_line.get(no, [])})
    n = len(lines)
    for line_no, errs in sorted(by_line.items()):
        if line_no > n:
            lines.append({"no": line_no, "text": "", "html": "", "errors": errs})
    ctx = {"source": source, "errors": errors, "lines": lines,
           "message": error.reason if error is not None else "", "ok": None}
    if checked is not None:
        name, sizes = checked
        ctx["ok"] = {"name": name, "sizes": sizes}
    return ctx


def new_kernel(request, source: str = "", error: Refusal | None = None, checked=None, status=200):
    """The "new kernel" page, or to htmx its form, with the checker's verdict on ``source``."""
    ctx = {"paste": paste_context(source, error, checked)}
    template = "histories/_paste.html" if request.htmx else "histories/new_kernel.html"
    return render(request, template, ctx, status=status)


def _starting_text(request) -> str:
    """The text the editor starts with: the root of session ``?from=ID`` or the source of
    library kernel ``?kernel=NAME``; empty when there is neither (or no such one)."""
    sid, name = request.GET.get("from"), request.GET.get("kernel")
    if sid:
        session = Session.objects.filter(id=sid[:16]).only("source").first()
        return session.source if session is not None else ""
    if name:
        try:
            return kernels.kernel_path(name).read_text()
        except (KeyError, OSError):
            return ""
    return ""


def _sizes(request) -> dict:
    """The ``size_NAME`` fields of the form; a Refusal if one is not a positive integer."""
    sizes = {}
    for key, value in request.POST.items():
        if key.startswith("size_"):
            if not value.strip().isdigit() or len(value.strip()) > MAX_SIZE_DIGITS:
                raise Refusal(400, f"size {key[5:]} must be a positive integer, not {value[:20]!r}")
            sizes[key[5:]] = int(value)
    return sizes


def _start(request, **how):
    """A new session of this browser's user (services.create_session(**how)), answered with
    a redirect to its editor; a Refusal propagates."""
    actor = browser_actor(request)
    if actor.user_id is None:
        actor.session_key = ensure_session_key(request)
    session, _token = services.create_session(actor, **how)
    if actor.user_id is None:
        remember_owned(request, session.id)
    if request.htmx:
        return client_redirect(session.url)
    return redirect(session.url)


@require_http_methods(["GET", "POST"])
def new_session(request):
    """GET: the "new kernel" page (with ``?from=ID`` or ``?kernel=NAME``: that root's or
    library kernel's text to start from).  POST: start a session from a library kernel (kernel=NAME)
    or from pasted IR (source=TEXT), at the ``size_NAME`` sizes when given; with check=1
    pasted IR is only checked.  Pasted IR the checker refuses comes back in the editor
    with the messages at their lines (400)."""
    if request.method == "GET":
        return new_kernel(request, _starting_text(request))
    kernel = request.POST.get("kernel") or None
    source = request.POST.get("source")
    if kernel is None and source is None:
        return refused(request, Refusal(400, "give a kernel name or IR source"))
    try:
        sizes = _sizes(request) or None
    except Refusal as r:
        if kernel is None:
            return new_kernel(request, source, r, status=r.status)
        return refused(request, r)
    if kernel is not None:
        try:
            return _start(request, kernel=kernel, sizes=sizes)
        except Refusal as r:
            return refused(request, r)
    try:
        if request.POST.get("check"):
            text, _kernel, all_sizes = services.checked_root(source=source, sizes=sizes)
            return new_kernel(request, source, checked=(engine.root_program(text).name, all_sizes))
        return _start(request, source=source, sizes=sizes)
    except Refusal as r:
        return new_kernel(request, source if isinstance(source, str) else "", r, status=r.status)


@require_POST
def resize_session(request, sid):
    """Start a new session whose root is session ``sid``'s root at the ``size_NAME`` sizes
    (the others as they are), checked like any new session; to htmx a refusal is shown
    in ``#sizes-error``."""
    session = session_or_404(sid)
    try:
        sizes = {**session.sizes, **_sizes(request)}
        if session.kernel:
            return _start(request, kernel=session.kernel, sizes=sizes, title=session.title)
        return _start(request, source=session.source, sizes=sizes, title=session.title)
    except Refusal as r:
        return refused(request, r, target="#sizes-error")


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

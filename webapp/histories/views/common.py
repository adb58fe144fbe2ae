"""What every page of a history needs: the session or a 404, integer parameters, and a
refusal shown as a page or, to htmx, as a flash message."""
from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.html import escape
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from webapp.refusal import Refusal

from .. import services


def refused(request, r: Refusal, template="histories/refused.html", target="#flash"):
    """A refusal: to htmx an alert swapped into ``target``, else the refusal page; both
    with the refusal's status."""
    if request.htmx:
        return flash(r, target)
    return render(request, template, {"status": r.status, "reason": r.reason}, status=r.status)


def flash(r: Refusal, target: str) -> HttpResponse:
    """The htmx answer to a refusal: an alert that replaces the inside of ``target``."""
    resp = HttpResponse(f'<p class="error" role="alert">{escape(r.reason)}</p>', status=r.status)
    return reswap(retarget(resp, target), "innerHTML")


def client_redirect(url: str) -> HttpResponse:
    """htmx: load ``url`` as a whole page (204, HX-Redirect)."""
    resp = HttpResponseClientRedirect(url)
    resp.status_code = 204
    return resp


def session_or_404(sid):
    try:
        return services.get_session(sid)
    except Refusal as r:
        raise Http404(r.reason) from None


def step_or_404(request, session, steps, name, default):
    """The step index that parameter ``name`` gives (``default`` when absent); 404 when
    ``session`` has no such step."""
    index = int_param(request, name, default)
    if index not in steps:
        raise Http404(f"session {session.id} has no step {index}")
    return index


def int_param(request, name, default=None):
    """A step index from the query or the form; ``default`` when absent or not an index."""
    raw = request.GET.get(name, request.POST.get(name))
    if raw in (None, ""):
        return default
    try:
        return services.parse_index(raw, name)
    except Refusal:
        return default

"""Schedules as text on the editor page: the path to a step as a ``.steps`` file, and the
replay of a pasted ``.steps`` text onto a step (all lines checked first; nothing applied
when one is not legal, and that line named)."""
from __future__ import annotations

from django.http import HttpResponse
from django.utils.html import escape
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url, reswap, retarget

from webapp.refusal import Refusal

from .. import services, transfer
from ..actors import browser_actor
from .common import int_param, refused, session_or_404, step_or_404
from .editor import editor_context


@require_GET
def steps_file(request, sid):
    """``GET /s/ID/steps.txt?step=N``: the path to step N (default: the current step)."""
    session = session_or_404(sid)
    steps = services.steps_of(session)
    index = step_or_404(request, session, steps, "step", session.current)
    resp = HttpResponse(transfer.steps_text(session, index, steps), content_type="text/plain; charset=utf-8")
    resp["Content-Disposition"] = f'attachment; filename="{session.id}-step{index}.steps"'
    return resp


@require_POST
def replay(request, sid):
    """``POST /s/ID/replay`` (parent, steps): the owner's replay of a ``.steps`` text; the
    editor at the last replayed step, or 400 with the first illegal line and its reason."""
    session = session_or_404(sid)
    text = request.POST.get("steps", "")
    parent = request.POST.get("parent", session.current)
    try:
        step, _count = transfer.replay_text(session, browser_actor(request), parent, text)
    except Refusal as r:
        if r.status != 400:
            return refused(request, r)
        if request.htmx:
            resp = HttpResponse(f'<p class="error" role="alert">{escape(r.reason)}</p>', status=400)
            return reswap(retarget(resp, "#replay-error"), "innerHTML")
        viewed = int_param(request, "parent", session.current)
        ctx = editor_context(request, session, viewed)
        ctx.update(replay_error=r.reason, replay_text=text)
        return render(request, "histories/editor.html", ctx, status=400)
    if request.htmx:
        ctx = editor_context(request, session, step.index, defer_actions=True)
        return push_url(render(request, "histories/_editor.html", ctx), f"{session.url}?step={step.index}")
    return redirect(f"{session.url}?step={step.index}")


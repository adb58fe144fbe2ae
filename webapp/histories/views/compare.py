"""Diffs between two steps (IR, C or CUDA; split or unified), the compare page, the
generated code of a step as a download, and the history as a JSON file."""
from __future__ import annotations

import json

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from webapp.api.views import step_code
from webapp.refusal import Refusal

from .. import engine, services, transfer
from .common import int_param, session_or_404, step_or_404

DIFF_MODES = ("split", "unified")
CODE_TABS = {"ir": ("IR", "dojo"), "c": ("C", "c"), "cuda": ("CUDA", "cuda")}


def diff_context(session, steps, a, b, code="ir", mode="split"):
    """The diff of one code view between steps a and b."""
    code = code if code in CODE_TABS else "ir"
    mode = mode if mode in DIFF_MODES else "split"
    ctx = {"session": session, "a": a, "b": b, "code": code, "mode": mode, "tabs": [], "rows": [],
           "error": None, "same": False, "label": CODE_TABS[code][0]}
    for key, (label, _) in CODE_TABS.items():
        ctx["tabs"].append({"key": key, "label": label, "active": key == code})
    if a is None:
        ctx["error"] = "the root has no parent to compare with; apply an action or compare two steps"
        return ctx
    if code == "ir":
        ta, tb = steps[a].ir, steps[b].ir
    else:
        try:
            pa = services.program_at(session, a, steps)
            pb = services.program_at(session, b, steps)
        except Refusal as r:
            ctx["error"] = r.reason
            return ctx
        ta, why_a = engine.generated(pa, code)
        tb, why_b = engine.generated(pb, code)
        if ta is None or tb is None:
            ctx["error"] = why_a or why_b
            return ctx
    language = CODE_TABS[code][1]
    added, removed = engine.diff_stats(ta, tb)
    ctx["added"], ctx["removed"] = added, removed
    if mode == "split":
        ctx["rows"] = engine.split_rows(ta, tb, language)
    else:
        ctx["rows"] = engine.unified_rows(ta, tb, f"step {a}", f"step {b}", language)
    ctx["same"] = not ctx["rows"]
    return ctx


@require_GET
def diff_partial(request, sid):
    session = session_or_404(sid)
    steps = services.steps_of(session)
    b = step_or_404(request, session, steps, "b", session.current)
    a = int_param(request, "a", steps[b].parent)
    if a is not None and a not in steps:
        raise Http404(f"session {sid} has no step {a}")
    ctx = {"diff": diff_context(session, steps, a, b, request.GET.get("code", "ir"),
                                request.GET.get("diff", "split")), "session": session}
    return render(request, "histories/_diff.html", ctx)


@require_GET
def compare(request, sid):
    session = session_or_404(sid)
    steps = services.steps_of(session)
    a = int_param(request, "a", 0)
    b = int_param(request, "b", session.current)
    if a not in steps or b not in steps:
        raise Http404(f"session {sid} has no such step")
    code = request.GET.get("code", "ir")
    mode = request.GET.get("diff", "split")
    ctx = {"session": session, "steps": [steps[i] for i in sorted(steps)], "a": a, "b": b,
           "diff": diff_context(session, steps, a, b, code, mode)}
    if request.htmx:
        return render(request, "histories/_diff.html", ctx)
    return render(request, "histories/compare.html", ctx)


@require_GET
def download(request, sid, index, target):
    """The generated source of a step as a file: the same answer as the API's."""
    return step_code(request, sid=sid, index=index, target=target)


@require_GET
def export_json(request, sid):
    session = session_or_404(sid)
    resp = HttpResponse(json.dumps(transfer.export_history(session), indent=1),
                        content_type="application/json")
    resp["Content-Disposition"] = f'attachment; filename="perfdojo-{session.id}.json"'
    return resp

"""Diffs between two steps (IR, C or CUDA; split or unified), the assembly of a step
beside its C, the compare page, the generated code of a step as a download, and the
history as a JSON file."""
from __future__ import annotations

import json

from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from webapp.api.views import step_code
from webapp.refusal import Refusal

from .. import code as code_views
from .. import diffs, engine, services, transfer
from .common import int_param, session_or_404, step_or_404

DIFF_MODES = ("split", "unified")
CODE_TABS = {"ir": ("IR", "dojo"), "c": ("C", "c"), "cuda": ("CUDA", "cuda"), "asm": ("Assembly", "asm")}


def diff_context(session, steps, a, b, code="ir", mode="split"):
    """The diff of one code view between steps a and b; for "asm" (not a diff) the
    assembly of step b, loaded by the page from ``asm_url`` (a compile can take seconds)."""
    code = code if code in CODE_TABS else "ir"
    mode = mode if mode in DIFF_MODES else "split"
    ctx = {"session": session, "a": a, "b": b, "code": code, "mode": mode, "tabs": [], "rows": [],
           "error": None, "same": False, "label": CODE_TABS[code][0]}
    for key, (label, _) in CODE_TABS.items():
        ctx["tabs"].append({"key": key, "label": label, "active": key == code})
    if code == "asm":
        ctx["asm_url"] = f"/s/{session.id}/asm?step={b}"
        return ctx
    if a is None:
        ctx["error"] = "the root has no parent to compare with; apply an action or compare two steps"
        return ctx
    ir_b = None
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
        if code == "c":
            mapped, _ = code_views.c_with_ir(pb)
            ir_b = mapped.ir_lines if mapped is not None and mapped.text == tb else None
    found = diffs.diff(ta, tb, CODE_TABS[code][1], mode, ir_b=ir_b,
                       name_a=f"step {a}", name_b=f"step {b}")
    ctx["rows"], ctx["added"], ctx["removed"] = found.rows, found.added, found.removed
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
def asm_partial(request, sid):
    """The assembly tab's content for ``?step=N``: the step's C and its assembly."""
    session = session_or_404(sid)
    steps = services.steps_of(session)
    raw = request.GET.get("step", "")
    try:
        index = services.parse_index(raw, "step")
    except Refusal as r:
        return HttpResponseBadRequest(r.reason)
    if index not in steps:
        raise Http404(f"session {sid} has no step {index}")
    ctx = {"session": session, "step": index}
    try:
        ctx["asm"] = code_views.asm_view(services.program_at(session, index, steps))
    except Refusal as r:
        ctx["asm"] = {"error": r.reason}
    return render(request, "histories/_code_asm.html", ctx)


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

"""The editor of a history (/s/ID/): the IR with its clickable loops and statements, the
legal actions there (and why some are not), the diff of the viewed step, the history tree;
and the owner's changes: apply an action, undo, go to a step; anyone's: fork."""
from __future__ import annotations

import time

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url, reswap, retarget

from dojo_core import explain_at
from webapp.refusal import Refusal

from .. import engine, integration, services, transfer
from ..actors import browser_actor, ensure_session_key, remember_owned
from ..tree import tree_context
from .bench import bench_context
from .common import client_redirect, int_param, refused, session_or_404, step_or_404
from .compare import diff_context


def ir_lines(ir_text: str, program=None) -> list:
    """The highlighted lines of an IR text; loop headers and statements carry their ref.
    With the replayed ``program`` (whose canonical text ir_text is) no parse is needed."""
    if program is not None and engine.print_text(program) == ir_text:
        refs = engine.program_line_refs(program)
    else:
        refs = engine.line_refs(ir_text)
    lines = []
    for no, html in enumerate(engine.highlighted(ir_text, "dojo"), start=1):
        ref = refs.get(no)
        kind = None
        if ref is not None:
            kind = engine.ref_kind(ref)
        lines.append({"no": no, "html": html, "ref": ref if kind == "statement" or kind == "loop" else None,
                      "kind": kind})
    return lines


def actions_context(session, steps, index, at, editable, error=None, tried="", defer=False):
    """Actions at step ``index``: grouped by kind (only those naming ``at`` when given),
    and at a loop/statement the reasons some one-loop transformations are not legal
    (``dojo_core.explain_at``).
    ``defer``: only a placeholder that loads them (htmx) once the page is updated."""
    ctx = {"session": session, "index": index, "at": at or "", "editable": editable, "groups": [],
           "not_legal": [], "error": error, "tried": tried, "count": 0, "replay_error": None,
           "deferred": defer and not at and not error}
    if ctx["deferred"]:
        return ctx
    try:
        program = services.program_at(session, index, steps)
    except Refusal as r:
        ctx["replay_error"] = r.reason
        return ctx
    found = engine.actions_of(program)
    there = explain_at(program, at, found) if at else None
    if there is not None:
        found = list(there.legal)
    groups = {}
    for a in found:
        groups.setdefault(a.kind, []).append(a.text)
    ctx["groups"] = [{"kind": k, "actions": v} for k, v in groups.items()]
    ctx["count"] = len(found)
    if there is not None:
        ctx["not_legal"] = [{"text": text, "reason": reason} for text, reason in there.not_legal]
        ctx["kind"] = there.kind
    return ctx


def _replayed(session, steps, index):
    try:
        return services.program_at(session, index, steps)
    except Refusal:
        return None


def editor_context(request, session, viewed=None, at=None, code="ir", mode="split", error=None, tried="",
                   defer_actions=False, steps=None):
    steps = steps if steps is not None else services.steps_of(session)
    if viewed is None or viewed not in steps:
        viewed = session.current if session.current in steps else 0
    editable = services.can_edit(session, browser_actor(request))
    jobs = integration.jobs_for(session.id)
    results = integration.with_speedups(integration.results_by_step(jobs))
    step = steps[viewed]
    problems = []
    if session.engine_version != engine.ENGINE_VERSION:
        problems = services.recheck(session)
    return {
        "session": session, "steps": steps, "step": step, "viewed": viewed, "editable": editable,
        "owner_name": session.owner.get_username() if session.owner_id else "anonymous",
        "tree": tree_context(session, steps, results, viewed)["tree"],
        "steps_text": transfer.steps_text(session, viewed, steps),
        "ir_lines": ir_lines(step.ir, _replayed(session, steps, viewed)),
        "actions": actions_context(session, steps, viewed, at, editable, error, tried, defer_actions),
        "diff": diff_context(session, steps, step.parent, viewed, code, mode),
        "bench": bench_context(session, steps, results, jobs, viewed, editable),
        "problems": problems, "engine_version": engine.ENGINE_VERSION,
        "parent": step.parent, "children": sorted(s.index for s in steps.values() if s.parent == viewed),
        "step_count": len(steps),
        "share_url": request.build_absolute_uri(f"{session.url}?step={viewed}"),
    }


@require_GET
def editor(request, sid):
    session = session_or_404(sid)
    partial = bool(request.htmx) and request.htmx.target == "editor"
    ctx = editor_context(request, session, int_param(request, "step"), request.GET.get("at") or None,
                         request.GET.get("code", "ir"), request.GET.get("diff", "split"), defer_actions=partial)
    if partial:
        return render(request, "histories/_editor.html", ctx)
    return render(request, "histories/editor.html", ctx)


@require_GET
def actions_partial(request, sid):
    session = session_or_404(sid)
    steps = services.steps_of(session)
    index = step_or_404(request, session, steps, "step", session.current)
    editable = services.can_edit(session, browser_actor(request))
    ctx = {"actions": actions_context(session, steps, index, request.GET.get("at") or None, editable),
           "session": session, "viewed": index}
    return render(request, "histories/_actions.html", ctx)


def _updated_editor(request, session, index):
    """To htmx: the editor at step ``index`` (actions deferred), pushed as the page's URL."""
    ctx = editor_context(request, session, index, code=request.POST.get("code", "ir"),
                         mode=request.POST.get("diff", "split"), defer_actions=True)
    return push_url(render(request, "histories/_editor.html", ctx), f"{session.url}?step={index}")


@require_POST
def apply_action(request, sid):
    session = session_or_404(sid)
    action = request.POST.get("action", "")
    parent = request.POST.get("parent", session.current)
    t0 = time.perf_counter()
    try:
        step, _created = services.add_step(session, browser_actor(request), parent, action)
    except Refusal as r:
        if r.status == 400 and request.htmx:
            resp = render(request, "histories/_action_error.html", {"reason": r.reason, "tried": action},
                          status=400)
            return reswap(retarget(resp, "#action-error"), "innerHTML")
        if r.status == 400:
            viewed = int_param(request, "parent", session.current)
            ctx = editor_context(request, session, viewed, error=r.reason, tried=action)
            return render(request, "histories/editor.html", ctx, status=400)
        return refused(request, r)
    if request.htmx:
        resp = _updated_editor(request, session, step.index)
        resp["Server-Timing"] = f"apply;dur={(time.perf_counter() - t0) * 1000:.1f}"
        return resp
    return redirect(f"{session.url}?step={step.index}")


def _owner_post(request, sid, fn):
    session = session_or_404(sid)
    try:
        index = fn(session, browser_actor(request))
    except Refusal as r:
        return refused(request, r)
    if request.htmx:
        return _updated_editor(request, session, index)
    return redirect(f"{session.url}?step={index}")


@require_POST
def undo(request, sid):
    """Move the current pointer to the parent of the viewed (or current) step."""
    def fn(session, actor):
        index = int_param(request, "step", session.current)
        steps = services.steps_of(session)
        if index in steps and index != session.current:
            services.set_current(session, actor, index)
        return services.undo(session, actor).index
    return _owner_post(request, sid, fn)


@require_POST
def goto(request, sid):
    """Make a step the current one: the next action branches from there."""
    def fn(session, actor):
        return services.set_current(session, actor, request.POST.get("step", "")).index
    return _owner_post(request, sid, fn)


@require_POST
def fork(request, sid):
    session = session_or_404(sid)
    actor = browser_actor(request)
    if actor.user_id is None:
        actor.session_key = ensure_session_key(request)
    try:
        new, _token = transfer.fork(session, actor, request.POST.get("step") or None)
    except Refusal as r:
        return refused(request, r)
    if actor.user_id is None:
        remember_owned(request, new.id)
    messages.success(request, f"Forked {session.id} into your own session {new.id}.")
    if request.htmx:
        return client_redirect(new.url)
    return redirect(new.url)

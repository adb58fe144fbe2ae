"""Agent runs over HTTP: the editor's panel (htmx, and plain forms without JS) and the JSON API.

    POST /s/ID/agents                  form: agent, budget, runner, step -> the panel (htmx) or a redirect
    POST /s/ID/agents/RUN/stop         -> the run list (htmx) or a redirect
    GET  /api/agents                   {"agents": [names], "max_budget"}
    POST /api/sessions/ID/agents       {"agent", "budget", "runner", "step", "seed", "options"} -> 202 {"run": ID}
    GET  /api/agents/RUN               the run: state, measurements, best
    POST /api/agents/RUN/stop          ask the run to stop -> the run
    POST /api/agents/RUN/notify        (the agents worker, signed) push the run's progress to its page
    GET  /api/dataset.jsonl            every measured step of every history, JSON lines, streamed

Refusals are ``{"error": reason}`` with a 4xx status (the API) or shown in the panel.
"""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.html import escape
from django.views.decorators.http import require_POST

from webapp.api.auth import api
from webapp.histories import integration
from webapp.histories import services as histories
from webapp.histories.actors import browser_actor
from webapp.histories.views.common import refused, session_or_404
from webapp.jsonapi import error, json_view, parse_body
from webapp.refusal import Refusal

from . import catalog, live, services
from .dataset import dataset_lines

API_FIELDS = {"agent", "budget", "runner", "step", "seed", "options"}
DEFAULT_BUDGET = 20


# ============================================================================ the editor panel

def panel_context(session, viewed, editable, error=None) -> dict:
    names = catalog.agent_names()
    available = integration.available() and bool(names)
    return {"session": session, "viewed": viewed, "agents": {
        "available": available, "editable": editable, "names": names,
        "default": "random" if "random" in names else (names[0] if names else ""),
        "unavailable": "no agent is installed" if not names else integration.NOT_AVAILABLE,
        "budget": DEFAULT_BUDGET, "max_budget": services.max_budget(),
        "runners": integration.runners(), "error": error,
        "runs": live.runs_context(session)["runs"] if session is not None else []}}


@require_POST
def start_from_editor(request, sid):
    session = session_or_404(sid)
    actor = browser_actor(request)
    form = request.POST
    step = form.get("step") or None
    try:
        run = services.start_run(session, actor, form.get("agent"), form.get("budget"),
                                 form.get("runner") or None, step)
    except Refusal as r:
        if request.htmx:
            viewed = step if isinstance(step, str) and step.isdigit() else session.current
            ctx = panel_context(session, viewed, histories.can_edit(session, actor), error=r.reason)
            return render(request, "agents/_panel.html", ctx, status=r.status)
        return refused(request, r)
    if request.htmx:
        return render(request, "agents/_panel.html", panel_context(session, run.start_step, True))
    return redirect(f"{session.url}?step={run.start_step}#agent-panel")


@require_POST
def stop_from_editor(request, sid, run_id):
    session = session_or_404(sid)
    try:
        run = services.get_run(run_id)
        if run.session_id != session.id:
            raise Refusal(404, f"session {session.id} has no agent run {run.id}")
        services.stop_run(run, browser_actor(request))
    except Refusal as r:
        if request.htmx:
            return HttpResponse(f'<p class="error" role="alert" id="agent-error">{escape(r.reason)}</p>',
                                status=r.status)
        return refused(request, r)
    if request.htmx:
        return render(request, "agents/_runs.html", live.runs_context(session))
    return redirect(f"{session.url}#agent-panel")


# ============================================================================ the JSON API

@api("GET")
def agents_list(request):
    return JsonResponse({"agents": catalog.agent_names(), "max_budget": services.max_budget()})


@api("POST")
def session_agents(request, sid):
    session = histories.get_session(sid)
    data = parse_body(request)
    unknown = set(data) - API_FIELDS
    if unknown:
        raise Refusal(400, f"unknown field(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(API_FIELDS))})")
    if "agent" not in data or "budget" not in data:
        raise Refusal(400, "agent and budget are required, e.g. {\"agent\": \"random\", \"budget\": 20}")
    if isinstance(data.get("budget"), str):
        raise Refusal(400, "budget must be a whole number of measurements (a JSON number)")
    run = services.start_run(session, request.dojo_actor, data.get("agent"), data.get("budget"),
                             data.get("runner"), data.get("step"), data.get("seed"), data.get("options"))
    return JsonResponse({"run": run.id, "url": f"/api/agents/{run.id}", "state": run.state,
                         "session": session.id, "step": run.start_step}, status=202)


@api("GET")
def run_detail(request, run_id):
    return JsonResponse(services.run_dict(services.get_run(run_id)))


@api("POST")
def run_stop(request, run_id):
    run = services.stop_run(services.get_run(run_id), request.dojo_actor)
    return JsonResponse(services.run_dict(run))


@json_view("POST")
def run_notify(request, run_id):
    if not live.signature_ok(int(run_id), request.headers.get(live.SIGNATURE_HEADER, "")):
        return error(403, "bad or missing agent signature")
    live.push(int(run_id))
    return HttpResponse(status=204)


@api("GET")
def dataset(request):
    resp = StreamingHttpResponse(dataset_lines(), content_type="application/x-ndjson; charset=utf-8")
    if request.GET.get("download"):
        resp["Content-Disposition"] = 'attachment; filename="perfdojo-dataset.jsonl"'
    return resp

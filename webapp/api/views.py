"""The JSON API (DESIGN.md section 9).  ``/api/openapi.json`` describes it (openapi.py).

    POST /api/sessions                       {"kernel": NAME} | {"source": TEXT} [+ "sizes", "title"]
                                             -> 201 {"id", "url", "owner_token" (anonymous only)}
    GET  /api/sessions/ID                    the history: steps (id, parent, text, ir, results)
    GET  /api/sessions/ID/actions?step=N     legal actions at step N [&at=LOOP_OR_sN]
    POST /api/sessions/ID/steps              {"parent": N, "action": TEXT} -> 201 the new step
    POST /api/sessions/ID/steps/N/benchmark  {"runner": NAME or null[, "options": {...}]} -> 202 {"job": JOB_ID}
    GET  /api/sessions/ID/steps/N            one step (+ "code" with ?code=c|cuda)
    POST /api/sessions/ID/current            {"step": N}: move the current pointer (undo/branch)
    POST /api/sessions/ID/fork               [{"step": N}] -> 201 {"id", "url", "owner_token"}
    GET  /api/sessions/ID/export             the history as JSON (format perfdojo-history)
    POST /api/sessions/import                an exported history -> 201 {"id", "url", ...}
    GET  /api/kernels                        the kernel library
    POST /api/tokens                         (signed in) a new API token for this user

Authentication: ``Authorization: Token <token>`` with a user's API token (pdk_...) or
an anonymous session's owner token (pdo_..., returned when it was created); or the
browser's session cookie.  Requests authenticated by a token are exempt from CSRF;
cookie-authenticated unsafe requests must carry the CSRF token (X-CSRFToken);
requests with neither act anonymously.

Every refusal is a 4xx (503 when benchmarking is not available) with {"error": reason}
(webapp/jsonapi.py, webapp/api/auth.py); nothing stored changes because of a refusal.
"""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from webapp.histories import engine, integration, services, transfer
from webapp.histories.actors import has_session_cookie, remember_owned
from webapp.histories.catalog import kernel_cards
from webapp.jsonapi import error, parse_body
from webapp.refusal import Refusal
from webapp.runners.shapes import iso

from . import openapi as spec
from .auth import api
from .jobs import submit_step
from .models import ApiToken


# ============================================================================ JSON shapes

def step_json(session, step, jobs=None) -> dict:
    d = {"id": step.index, "index": step.index, "parent": step.parent, "text": step.text,
         "ir": step.ir, "created": iso(step.created), "url": f"/s/{session.id}/?step={step.index}"}
    if jobs is not None:
        d["results"] = jobs
    return d


def session_json(session, actor) -> dict:
    jobs = integration.jobs_for(session.id)
    by_step = {}
    for job in jobs:
        by_step.setdefault(job.get("step_index"), []).append(job)
    return {
        "id": session.id,
        "url": session.url,
        "kernel": session.kernel or None,
        "title": session.title,
        "owner": session.owner.get_username() if session.owner_id else None,
        "editable": services.can_edit(session, actor),
        "source": session.source,
        "sizes": session.sizes,
        "engine_version": session.engine_version,
        "created": iso(session.created),
        "forked_from": session.forked_from_id,
        "current": session.current,
        "steps": [step_json(session, s, by_step.get(s.index, [])) for s in session.steps.all()],
    }


def _created(request, session, token, status=201, **extra) -> JsonResponse:
    body = {"id": session.id, "url": session.url, **extra}
    if token:
        body["owner_token"] = token
    actor = request.dojo_actor
    if not request.dojo_by_token and has_session_cookie(request) and actor.user_id is None:
        remember_owned(request, session.id)
    return JsonResponse(body, status=status)


def _anon_key(request):
    """Tie an anonymous session to the browser session only when the request has one."""
    actor = request.dojo_actor
    if request.dojo_by_token or not has_session_cookie(request):
        actor.session_key = ""
    return actor


# ============================================================================ views

@api("POST")
def sessions(request):
    data = parse_body(request)
    unknown = set(data) - {"kernel", "source", "sizes", "title"}
    if unknown:
        raise Refusal(400, f"unknown field(s): {', '.join(sorted(unknown))} (known: kernel, source, sizes, title)")
    if ("kernel" in data) == ("source" in data):
        raise Refusal(400, "give exactly one of 'kernel' (a library kernel name) or 'source' (IR text)")
    if not isinstance(data.get("title", ""), str):
        raise Refusal(400, "title must be a string")
    session, token = services.create_session(_anon_key(request), kernel=data.get("kernel"),
                                             source=data.get("source"), sizes=data.get("sizes"),
                                             title=data.get("title") or "")
    return _created(request, session, token, kernel=session.kernel or None, sizes=session.sizes,
                    current=0)


@api("GET")
def session_detail(request, sid):
    session = services.get_session(sid)
    return JsonResponse(session_json(session, request.dojo_actor))


def _step_param(request, session, name="step"):
    raw = request.GET.get(name)
    return session.current if raw in (None, "") else services.parse_index(raw, name)


def _body_with(request, field: str, refused: str) -> dict:
    """The request's JSON body; refused (400, ``refused``) when it has no ``field``."""
    data = parse_body(request)
    if field not in data:
        raise Refusal(400, refused)
    return data


def _session_step(sid, index=None, request=None):
    """(session, its {index: Step}, the step): step ``index``, else the one the request's
    ``?step=`` names (by default the session's current step)."""
    session = services.get_session(sid)
    steps = services.steps_of(session)
    if index is None:
        index = _step_param(request, session)
    return session, steps, services.get_step(session, index, steps)


@api("GET")
def session_actions(request, sid):
    session, steps, step = _session_step(sid, request=request)
    program = services.program_at(session, step.index, steps)
    found = engine.actions_of(program)
    at = request.GET.get("at")
    if at:
        found = [a for a in found if at in engine.refs_in(a.text)]
    return JsonResponse({"session": session.id, "step": step.index, "at": at or None, "count": len(found),
                         "actions": [{"text": a.text, "kind": a.kind} for a in found]})


@api("POST")
def session_steps(request, sid):
    session = services.get_session(sid)
    data = _body_with(request, "action", "action is required (a step text such as 'split i by 32')")
    parent = data.get("parent", session.current)
    step, created = services.add_step(session, request.dojo_actor, parent, data.get("action"))
    body = step_json(session, step)
    body["created"] = created
    body["current"] = session.current
    return JsonResponse(body, status=201 if created else 200)


@api("GET")
def step_detail(request, sid, index):
    session, steps, step = _session_step(sid, index)
    body = step_json(session, step)
    target = request.GET.get("code")
    if target:
        if target not in engine.TARGETS:
            raise Refusal(400, "code must be 'c' or 'cuda'")
        code, why = engine.generated(services.program_at(session, step.index, steps), target)
        body["code"] = code
        body["code_error"] = why
    return JsonResponse(body)


@api("GET")
def step_code(request, sid, index, target):
    """The generated C or CUDA source of a step, as a download."""
    session, steps, step = _session_step(sid, index)
    code, why = engine.generated(services.program_at(session, step.index, steps), target)
    if code is None:
        raise Refusal(409 if "failed" in why else 503, why)
    ext = engine.TARGETS[target][1]
    resp = HttpResponse(code, content_type="text/plain; charset=utf-8")
    name = f"{session.kernel or 'kernel'}-{session.id}-step{step.index}.{ext}"
    resp["Content-Disposition"] = f'attachment; filename="{name}"'
    return resp


@api("POST")
def step_benchmark(request, sid, index):
    session = services.get_session(sid)
    data = parse_body(request)
    runner = data.get("runner")
    if runner is not None and (not isinstance(runner, str) or len(runner) > 64):
        raise Refusal(400, "runner must be a runner name or label, or null for any")
    options = data.get("options")
    if options is not None and not isinstance(options, dict):
        raise Refusal(400, "options must be an object (min_time, timeout_s, threads, flush)")
    job = submit_step(session, request.dojo_actor, index, runner, options)
    return JsonResponse({"job": job["id"], "state": job.get("state"), "url": job.get("url"),
                         "runner": job.get("runner")}, status=202)


@api("POST")
def session_current(request, sid):
    session = services.get_session(sid)
    data = _body_with(request, "step", "step is required")
    step = services.set_current(session, request.dojo_actor, data["step"])
    return JsonResponse({"session": session.id, "current": step.index})


@api("POST")
def session_fork(request, sid):
    session = services.get_session(sid)
    data = parse_body(request)
    new, token = transfer.fork(session, _anon_key(request), data.get("step"))
    return _created(request, new, token, forked_from=session.id, current=new.current)


@api("GET")
def session_export(request, sid):
    session = services.get_session(sid)
    resp = JsonResponse(transfer.export_history(session), json_dumps_params={"indent": 1})
    if request.GET.get("download"):
        resp["Content-Disposition"] = f'attachment; filename="perfdojo-{session.id}.json"'
    return resp


@api("POST")
def session_import(request):
    data = parse_body(request)
    session, token, warnings = transfer.import_history(_anon_key(request), data)
    return _created(request, session, token, warnings=warnings, steps=session.steps.count())


@api("GET")
def kernels(request):
    return JsonResponse({"kernels": [
        {"name": k["name"], "title": k["title"], "category": k["category"], "sizes": k["sizes"],
         "flops": k["flops"]} for k in kernel_cards(with_results=False)]})


@api("POST")
def tokens(request):
    actor = request.dojo_actor
    if actor.user_id is None:
        raise Refusal(401, "sign in to make an API token")
    data = parse_body(request)
    note = data.get("note") or ""
    if not isinstance(note, str):
        raise Refusal(400, "note must be a string")
    token, raw = ApiToken.issue(actor.user, note)
    return JsonResponse({"token": raw, "prefix": token.prefix, "note": token.note}, status=201)


@api("GET")
def openapi(request):
    return JsonResponse(spec.describe(request), json_dumps_params={"indent": 1})


@csrf_exempt
def not_found(request, rest=""):
    return error(404, f"no API endpoint {request.path!r}; see /api/openapi.json")

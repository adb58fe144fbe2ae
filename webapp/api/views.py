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

Every refusal is a 4xx (503 when benchmarking is not available) with {"error": reason};
nothing stored changes because of a refusal.
"""
from __future__ import annotations

import functools
import json
import logging

from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from webapp.histories import engine, integration, services
from webapp.histories.actors import browser_actor, has_session_cookie, remember_owned
from webapp.histories.services import Refusal

from .models import ApiToken

log = logging.getLogger(__name__)

MAX_BODY = 8 * 1024 * 1024


def error(status: int, reason: str, **extra) -> JsonResponse:
    return JsonResponse({"error": reason, **extra}, status=status)


def _csrf_failure(request):
    mw = CsrfViewMiddleware(lambda r: None)
    return mw.process_view(request, None, (), {}) is not None


def _body(request) -> dict:
    try:
        raw = request.body
    except RequestDataTooBig:
        raise Refusal(413, "request body too large") from None
    if len(raw) > MAX_BODY:
        raise Refusal(413, "request body too large")
    if not raw.strip():
        return {}
    ctype = request.content_type or ""
    if ctype not in ("application/json", "text/plain", "") and not ctype.endswith("+json"):
        raise Refusal(415, f"send JSON (Content-Type: application/json), not {ctype}")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refusal(400, f"bad JSON: {exc}") from None
    except RecursionError:
        raise Refusal(400, "bad JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise Refusal(400, "the body must be a JSON object")
    return data


def _actor(request):
    """(actor, authenticated by token?) or a Refusal for a bad Authorization header."""
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() != "token" or not raw:
            raise Refusal(401, "Authorization must be 'Token <API token or owner token>'")
        if raw.startswith("pdk_"):
            user = ApiToken.user_for(raw)
            if user is None:
                raise Refusal(401, "unknown or revoked API token")
            return services.Actor(user=user), True
        if not raw.startswith("pdo_"):
            raise Refusal(401, "unknown token (API tokens start with pdk_, owner tokens with pdo_)")
        return services.Actor(token=raw), True
    return browser_actor(request), False


def api(*methods):
    """A JSON view: method check, actor, CSRF for cookie-authenticated writes, refusals as 4xx."""
    def wrap(view):
        @csrf_exempt
        @functools.wraps(view)
        def inner(request, *args, **kwargs):
            if request.method not in methods:
                resp = error(405, f"method {request.method} not allowed here (use {', '.join(methods)})")
                resp["Allow"] = ", ".join(methods)
                return resp
            try:
                actor, by_token = _actor(request)
                if (request.method not in ("GET", "HEAD", "OPTIONS") and not by_token
                        and has_session_cookie(request) and _csrf_failure(request)):
                    return error(403, "CSRF check failed: send the X-CSRFToken header with the "
                                      "csrftoken cookie, or authenticate with 'Authorization: Token ...'")
                request.dojo_actor, request.dojo_by_token = actor, by_token
                return view(request, *args, **kwargs)
            except Refusal as r:
                extra = dict(r.extra)
                retry = extra.get("retry_after")
                resp = error(r.status, r.reason, **extra)
                if retry is not None:
                    resp["Retry-After"] = str(int(retry))
                return resp
        return inner
    return wrap


# ============================================================================ JSON shapes

def _iso(dt):
    return dt.isoformat(timespec="milliseconds") if dt else None


def step_json(session, step, jobs=None) -> dict:
    d = {"id": step.index, "index": step.index, "parent": step.parent, "text": step.text,
         "ir": step.ir, "created": _iso(step.created), "url": f"/s/{session.id}/?step={step.index}"}
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
        "created": _iso(session.created),
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
    data = _body(request)
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


@api("GET")
def session_actions(request, sid):
    session = services.get_session(sid)
    steps = services.steps_of(session)
    step = services.get_step(session, _step_param(request, session), steps)
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
    data = _body(request)
    if "action" not in data:
        raise Refusal(400, "action is required (a step text such as 'split i by 32')")
    parent = data.get("parent", session.current)
    step, created = services.add_step(session, request.dojo_actor, parent, data.get("action"))
    body = step_json(session, step)
    body["created"] = created
    body["current"] = session.current
    return JsonResponse(body, status=201 if created else 200)


@api("GET")
def step_detail(request, sid, index):
    session = services.get_session(sid)
    steps = services.steps_of(session)
    step = services.get_step(session, index, steps)
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
    session = services.get_session(sid)
    steps = services.steps_of(session)
    step = services.get_step(session, index, steps)
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
    data = _body(request)
    runner = data.get("runner")
    if runner is not None and (not isinstance(runner, str) or len(runner) > 64):
        raise Refusal(400, "runner must be a runner name or label, or null for any")
    options = data.get("options")
    if options is not None and not isinstance(options, dict):
        raise Refusal(400, "options must be an object (min_time, timeout_s, threads, flush)")
    job = benchmark(session, request.dojo_actor, index, runner, options)
    return JsonResponse({"job": job["id"], "state": job.get("state"), "url": job.get("url"),
                         "runner": job.get("runner")}, status=202)


def benchmark(session, actor, index, runner, options=None) -> dict:
    """Submit a benchmark of one step (owner only); the job dict."""
    services.require_owner(session, actor)
    steps = services.steps_of(session)
    step = services.get_step(session, index, steps)
    services.program_at(session, step.index, steps)        # must still replay
    texts = list(services.path_texts(steps, step.index))
    if not integration.available():
        raise Refusal(503, integration.NOT_AVAILABLE)
    from .jobs import check_quota
    check_quota(session_id=session.id)
    source = _library_source(session) or session.source
    try:
        return integration.submit(source, texts, session.sizes, runner or None,
                                  session.kernel, session.id, step.index, options)
    except integration.Unavailable as exc:
        raise Refusal(503, str(exc)) from None
    except ValueError as exc:
        status = 409 if type(exc).__name__ == "NoRunner" else 400
        raise Refusal(status, str(exc)) from None


def _library_source(session):
    """The library kernel's own text when the session's root is that kernel at its sizes
    (the runners then know its flop count), else None."""
    if not session.kernel:
        return None
    try:
        from dojo_core import kernels
        from dojo_core.printer import print_program
        if print_program(kernels.load_kernel(session.kernel, session.sizes)) == session.source:
            return print_program(kernels.load_kernel(session.kernel))
    except Exception:                                    # noqa: BLE001 - optional
        return None
    return None


@api("POST")
def session_current(request, sid):
    session = services.get_session(sid)
    data = _body(request)
    if "step" not in data:
        raise Refusal(400, "step is required")
    step = services.set_current(session, request.dojo_actor, data["step"])
    return JsonResponse({"session": session.id, "current": step.index})


@api("POST")
def session_fork(request, sid):
    session = services.get_session(sid)
    data = _body(request)
    new, token = services.fork(session, _anon_key(request), data.get("step"))
    return _created(request, new, token, forked_from=session.id, current=new.current)


@api("GET")
def session_export(request, sid):
    session = services.get_session(sid)
    resp = JsonResponse(services.export_history(session), json_dumps_params={"indent": 1})
    if request.GET.get("download"):
        resp["Content-Disposition"] = f'attachment; filename="perfdojo-{session.id}.json"'
    return resp


@api("POST")
def session_import(request):
    data = _body(request)
    session, token, warnings = services.import_history(_anon_key(request), data)
    return _created(request, session, token, warnings=warnings, steps=session.steps.count())


@api("GET")
def kernels(request):
    from webapp.histories.views import kernel_cards
    return JsonResponse({"kernels": [
        {"name": k["name"], "title": k["title"], "category": k["category"], "sizes": k["sizes"],
         "flops": k["flops"]} for k in kernel_cards(with_results=False)]})


@api("POST")
def tokens(request):
    actor = request.dojo_actor
    if actor.user_id is None:
        raise Refusal(401, "sign in to make an API token")
    data = _body(request)
    note = data.get("note") or ""
    if not isinstance(note, str):
        raise Refusal(400, "note must be a string")
    token, raw = ApiToken.issue(actor.user, note)
    return JsonResponse({"token": raw, "prefix": token.prefix, "note": token.note}, status=201)


@api("GET")
def openapi(request):
    from .openapi import describe
    return JsonResponse(describe(request), json_dumps_params={"indent": 1})


@csrf_exempt
def not_found(request, rest=""):
    return error(404, f"no API endpoint {request.path!r}; see /api/openapi.json")

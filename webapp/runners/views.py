"""HTTP views: the public job/runner API and the runner protocol (JSON).

Public (DESIGN.md section 9):
    GET  /api/runners                 {"runners": [runner, ...]} with status and hardware
    GET  /api/jobs/ID                 job_dict: state and result
    (POST /api/jobs and POST /api/jobs/ID/cancel, which need the submitter's credentials,
    are webapp.api's: webapp/api/job_views.py)

Runner protocol (Authorization: Bearer <runner secret>, except register):
    POST /api/runners/register        {"token", "name", "labels", "hardware", "sandbox",
                                       "secret": the current one when registering a name again}
    POST /api/runners/heartbeat       {"current_job": ID or null} -> {"cancel": [ID, ...]}
    POST /api/runners/jobs/ID/claim   {"attempt": N or absent: the ticket's} -> {"job": spec, "attempt": N}
    POST /api/runners/jobs/ID/result  {"attempt", "state", "result", "claim": false}
                                      (idempotent per attempt; claim: true claims it too)
    POST /api/runners/jobs/ID/release {"reason"}: hand a running job back
    POST /api/runners/bye             go offline now

Errors are JSON {"error": reason}: 400 bad input, 401 no credentials, 403 wrong
credentials or not the job's runner, 404 unknown job, 405 wrong method, 409 a
state conflict. Never a 500 for bad input.
"""
from __future__ import annotations

import functools
import json
import logging

from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from . import protocol, services
from .models import Job
from .services import Refused

log = logging.getLogger(__name__)
MAX_BODY = 2 * 1024 * 1024
MAX_ID = (1 << 63) - 1


def error(status: int, reason: str) -> JsonResponse:
    return JsonResponse({"error": reason}, status=status)


def body(request) -> dict:
    if len(request.body) > MAX_BODY:
        raise Refused(400, "request body too large")
    if not request.body.strip():
        return {}
    try:
        data = json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refused(400, f"bad JSON: {exc}") from None
    if not isinstance(data, dict):
        raise Refused(400, "the body must be a JSON object")
    return data


def api(*methods):
    """JSON view: method check, Refused/ValueError -> 4xx, ids in range."""
    def wrap(view):
        @csrf_exempt
        @functools.wraps(view)
        def inner(request, *args, **kwargs):
            if request.method not in methods:
                resp = error(405, f"use {' or '.join(methods)}")
                resp["Allow"] = ", ".join(methods)
                return resp
            for key in ("job_id",):
                if key in kwargs:
                    kwargs[key] = int(kwargs[key])
                    if kwargs[key] > MAX_ID:
                        return error(404, f"no job {kwargs[key]}")
            try:
                return view(request, *args, **kwargs)
            except Refused as exc:
                return error(exc.status, exc.reason)
            except ValueError as exc:
                return error(400, str(exc))
        return inner
    return wrap


def runner_of(request):
    return protocol.authenticate(request.headers.get("Authorization"))


# ----------------------------------------------------------------------------- public

@api("GET")
def runners_list(request):
    return JsonResponse({"runners": services.runners_list()})


def _job(job_id: int) -> Job:
    job = Job.objects.select_related("runner").filter(id=job_id).first()
    if job is None:
        raise Refused(404, f"no job {job_id}")
    return job


@api("GET")
def job_detail(request, job_id):
    return JsonResponse(services.job_dict(_job(job_id)))


# ----------------------------------------------------------------------------- runner protocol

@api("POST")
def register(request):
    data = body(request)
    answer = protocol.register(data.get("token"), data.get("name"), data.get("labels", []),
                               data.get("hardware", {}), data.get("sandbox"), data.get("secret"))
    return JsonResponse(answer, status=201)


@api("POST")
def heartbeat(request):
    runner = runner_of(request)
    return JsonResponse(protocol.heartbeat(runner, body(request).get("current_job")))


@api("POST")
def claim(request, job_id):
    runner = runner_of(request)
    return JsonResponse(protocol.claim(runner, job_id, body(request).get("attempt")))


@api("POST")
def result(request, job_id):
    runner = runner_of(request)
    data = body(request)
    return JsonResponse(protocol.report(runner, job_id, data.get("attempt"), data.get("state"),
                                        data.get("result"), data.get("claim", False)))


@api("POST")
def release(request, job_id):
    runner = runner_of(request)
    return JsonResponse(protocol.release(runner, job_id, body(request).get("reason")))


@api("POST")
def bye(request):
    return JsonResponse(protocol.goodbye(runner_of(request)))

"""HTTP views: the public job/runner API and the runner protocol (JSON).

Public (DESIGN.md section 9):
    GET  /api/runners                 {"runners": [runner, ...]} with status and hardware
    GET  /api/jobs/ID                 job_dict: state and result
    (POST /api/jobs and POST /api/jobs/ID/cancel, which need the submitter's credentials,
    are webapp.api's: webapp/api/job_views.py)

Runner protocol (Authorization: Bearer <runner secret>, except register):
    POST /api/runners/register        {"token", "name", "labels", "hardware", "sandbox",
                                       "secret": the current one when registering a name again,
                                       "peaks": {"gflops", "gbytes_per_s", ...} measured (optional)}
    POST /api/runners/heartbeat       {"current_job": ID or null} -> {"cancel": [ID, ...]}
    POST /api/runners/jobs/ID/claim   {"attempt": N or absent: the ticket's} -> {"job": spec, "attempt": N}
    POST /api/runners/jobs/ID/result  {"attempt", "state", "result", "claim": false}
                                      (idempotent per attempt; claim: true claims it too)
    POST /api/runners/jobs/ID/release {"reason"}: hand a running job back
    POST /api/runners/bye             go offline now

Errors are JSON {"error": reason} (webapp/jsonapi.py): 400 bad input, 401 no credentials,
403 wrong credentials or not the job's runner, 404 unknown job, 405 wrong method, 409 a
state conflict, 413 a body over the one size limit. Never a 500 for bad input.
"""
from __future__ import annotations

from django.http import JsonResponse

from webapp.jsonapi import json_view, parse_body
from webapp.refusal import Refusal

from . import protocol, services
from .models import Job


def runner_of(request):
    return protocol.authenticate(request.headers.get("Authorization"))


# ----------------------------------------------------------------------------- public

@json_view("GET")
def runners_list(request):
    return JsonResponse({"runners": services.runners_list()})


def _job(job_id: int) -> Job:
    job = Job.objects.select_related("runner").filter(id=job_id).first()
    if job is None:
        raise Refusal(404, f"no job {job_id}")
    return job


@json_view("GET")
def job_detail(request, job_id):
    return JsonResponse(services.job_dict(_job(job_id)))


# ----------------------------------------------------------------------------- runner protocol

@json_view("POST")
def register(request):
    data = parse_body(request)
    answer = protocol.register(data.get("token"), data.get("name"), data.get("labels", []),
                               data.get("hardware", {}), data.get("sandbox"), data.get("secret"),
                               peaks=data.get("peaks"))
    return JsonResponse(answer, status=201)


@json_view("POST")
def heartbeat(request):
    runner = runner_of(request)
    return JsonResponse(protocol.heartbeat(runner, parse_body(request).get("current_job")))


@json_view("POST")
def claim(request, job_id):
    runner = runner_of(request)
    return JsonResponse(protocol.claim(runner, job_id, parse_body(request).get("attempt")))


@json_view("POST")
def result(request, job_id):
    runner = runner_of(request)
    data = parse_body(request)
    return JsonResponse(protocol.report(runner, job_id, data.get("attempt"), data.get("state"),
                                        data.get("result"), data.get("claim", False)))


@json_view("POST")
def release(request, job_id):
    runner = runner_of(request)
    return JsonResponse(protocol.release(runner, job_id, parse_body(request).get("reason")))


@json_view("POST")
def bye(request):
    return JsonResponse(protocol.goodbye(runner_of(request)))

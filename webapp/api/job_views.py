"""Job submission and cancel over the JSON API (thin: the rules are in jobs.py).

    POST /api/jobs              {"source" | "kernel", "steps", "sizes", "runner", "options",
                                 "session_id", "step_index"} -> 201 the job (GET /api/jobs/ID)
    POST /api/jobs/ID/cancel    the job after the cancel (submitter or session owner only)
"""
from __future__ import annotations

from django.http import JsonResponse

from webapp.jsonapi import parse_body
from webapp.runners import services as runners

from . import jobs
from .auth import api


@api("POST")
def job_submit(request):
    job = jobs.submit(request.dojo_actor, parse_body(request))
    return JsonResponse({"job": job.id, **runners.job_dict(job)}, status=201)


@api("POST")
def job_cancel(request, job_id):
    return JsonResponse(runners.job_dict(jobs.cancel(request.dojo_actor, job_id)))

"""Job submission and cancel over the JSON API (thin: the rules are in jobs.py).

    POST /api/jobs              {"source" | "kernel", "steps", "sizes", "runner", "options",
                                 "session_id", "step_index"} -> 201 the job (GET /api/jobs/ID)
    POST /api/jobs/ID/cancel    the job after the cancel (submitter or session owner only)
"""
from __future__ import annotations

from django.http import JsonResponse

from webapp.runners import services as runners

from . import jobs
from .views import _body, api

MAX_ID = (1 << 63) - 1


@api("POST")
def job_submit(request):
    job = jobs.submit(request.dojo_actor, _body(request))
    return JsonResponse({"job": job.id, **runners.job_dict(job)}, status=201)


@api("POST")
def job_cancel(request, job_id):
    job_id = int(job_id)
    if job_id > MAX_ID:
        return JsonResponse({"error": f"no job {job_id}"}, status=404)
    return JsonResponse(runners.job_dict(jobs.cancel(request.dojo_actor, job_id)))

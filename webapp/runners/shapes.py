"""The JSON shapes of runners and jobs (GET /api/runners, GET /api/jobs/ID, pushes).

``job_dict`` never shows who submitted a job; ``runners_list`` counts queue depths
through the state index.  Also reachable as ``webapp.runners.services.job_dict`` etc.
"""
from __future__ import annotations

from django.db.models import Count

from .models import Job, Runner


def iso(dt):
    return dt.isoformat(timespec="milliseconds") if dt else None



def job_dict(job: Job) -> dict:
    result = job.result
    return {
        "id": job.id,
        "url": f"/api/jobs/{job.id}",
        "state": job.state,
        "final": job.final,
        "kernel": job.kernel or None,
        "sizes": job.sizes or {},
        "steps": list(job.steps or []),
        "options": job.options or {},
        "runner": job.runner.name if job.runner_id and job.runner else None,
        "requested_runner": job.requested_runner,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "created": iso(job.created),
        "started": iso(job.started),
        "finished": iso(job.finished),
        "heartbeat": iso(job.heartbeat),
        "result": result,
        "error": (result or {}).get("error") if isinstance(result, dict) else None,
        "session_id": job.session_id,
        "step_index": job.step_index,
        "program_hash": job.program_hash or None,
        "batch": job.batch or None,
    }


def runner_dict(runner: Runner, depth: dict | None = None) -> dict:
    d = {
        "name": runner.name,
        "status": runner.status,
        "online": runner.online,
        "labels": list(runner.labels or []),
        "hardware": runner.hardware or {},
        "sandbox": runner.sandbox or {},
        "peaks": runner.peaks or {},
        "queue": runner.queue,
        "last_heartbeat": iso(runner.last_heartbeat),
        "registered": iso(runner.registered),
        "current_job": runner.current_job_id,
    }
    if depth is not None:
        d["queue_depth"] = depth.get(runner.id, 0)
    return d


def runners_list() -> list[dict]:
    runners = list(Runner.objects.all())
    depth = dict(Job.objects.filter(state=Job.QUEUED, runner__isnull=False)
                 .values_list("runner").annotate(n=Count("id")).values_list("runner", "n"))
    return [runner_dict(r, depth) for r in runners]

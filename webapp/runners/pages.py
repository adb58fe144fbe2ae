"""The runners page (/runners/): who is online, their hardware and queue depth, and the
recent jobs.  It never fails because the job table cannot be read: it shows what can be."""
from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from webapp.histories import integration
from webapp.histories.present import job_view

RECENT_JOBS = 30


@require_GET
def runners_page(request):
    runners = integration.runners()
    for r in runners:
        r["hardware_text"] = integration.hardware_summary(r.get("hardware") or {})
    jobs = [job_view(j) | {"kernel": j.get("kernel"), "session": j.get("session_id"),
                           "created": j.get("created")} for j in integration.recent_jobs(RECENT_JOBS)]
    return render(request, "histories/runners.html", {
        "available": integration.available(), "runners": runners, "jobs": jobs,
        "online": sum(1 for r in runners if r.get("online"))})

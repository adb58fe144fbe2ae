"""Benchmarks on the editor page: the panel (jobs, results per runner, the cross-hardware
table, the speedup plot), the Benchmark button, and the out-of-band swaps that the
websocket consumer sends for each job.update."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from webapp.api.jobs import submit_step
from webapp.refusal import Refusal

from .. import integration, services
from ..actors import browser_actor
from ..plot import speedup_svg
from ..present import fmt_time, job_view, pending, time_range
from .common import flash, int_param, refused, session_or_404

RECENT_JOBS = 20


def _speedup(m) -> str:
    return f"{m['speedup']:.2f}×" if m and m.get("speedup") else ""


def bench_context(session, steps, results, jobs, viewed, editable):
    """The panel's rows (one per step and runner), the cross-hardware table, the plot."""
    runners = integration.runners()
    rows = []
    series = {}
    for index in sorted(results):
        if index not in steps:
            continue
        entry = results[index]
        for runner, m in sorted(entry["by_runner"].items()):
            rows.append({"index": index, "text": steps[index].text or "(root)", "runner": runner,
                         "median": fmt_time(m["median_s"]), "spread": time_range(m),
                         "min": fmt_time(m.get("min_s")), "max": fmt_time(m.get("max_s")),
                         "gflops": f"{m['gflops']:.1f}" if m.get("gflops") else "",
                         "speedup": _speedup(m) or "—", "hardware": m["hardware"], "job": m["job"]})
            if m.get("speedup"):
                series.setdefault(runner, []).append((index, m["speedup"]))
    # the cross-hardware view: one column per runner
    runner_names = sorted({r["runner"] for r in rows})
    cross = []
    for index in sorted(results):
        if index not in steps or not results[index]["by_runner"]:
            continue
        cells = []
        for name in runner_names:
            m = results[index]["by_runner"].get(name)
            cells.append({"median": fmt_time(m["median_s"]) if m else "", "speedup": _speedup(m)})
        cross.append({"index": index, "text": steps[index].text or "(root)", "cells": cells})
    return {"session": session, "available": integration.available(), "not_available": integration.NOT_AVAILABLE,
            "runners": runners, "online": [r for r in runners if r.get("online")],
            "jobs": [job_view(j) for j in reversed(jobs[-RECENT_JOBS:])], "rows": rows, "cross": cross,
            "runner_names": runner_names, "plot": speedup_svg(series), "viewed": viewed, "editable": editable}


def bench_panel_context(session, viewed, editable, event_job: dict | None = None):
    """The benchmark panel; ``event_job`` (a pushed job dict, the newest snapshot of that
    job) replaces the stored row of the same id, or is added."""
    steps = services.steps_of(session)
    jobs = integration.jobs_for(session.id)
    if event_job is not None and event_job.get("session_id") in (None, session.id):
        jobs = [j for j in jobs if j.get("id") != event_job.get("id")] + [event_job]
        jobs.sort(key=lambda j: (j.get("id") is None, j.get("id") if isinstance(j.get("id"), int) else 0))
    results = integration.with_speedups(integration.results_by_step(jobs))
    return {"bench": bench_context(session, steps, results, jobs, viewed, editable), "session": session,
            "results": results}


def job_update_html(session, job: dict) -> str:
    """The out-of-band swaps for one job.update event (used by the websocket consumer):
    the benchmark panel (jobs, results, plot) and the step's badge in the history tree."""
    ctx = bench_panel_context(session, session.current, False, event_job=job)
    ctx["oob"] = True
    index = job.get("step_index")
    entry = ctx["results"].get(index, {}) if isinstance(index, int) else {}
    best = entry.get("best")
    ctx["badge"] = {"index": index if isinstance(index, int) else None,
                    "best_time": fmt_time(best["median_s"]) if best else "",
                    "speedup": entry.get("best_speedup"), "pending": pending(entry)}
    return render_to_string("histories/_job_update.html", ctx)


@require_POST
def benchmark(request, sid, index):
    session = session_or_404(sid)
    runner = (request.POST.get("runner") or "").strip() or None
    try:
        job = submit_step(session, browser_actor(request), index, runner)
    except Refusal as r:
        if request.htmx:
            return flash(r, "#bench-message")
        return refused(request, r)
    if request.htmx:
        ctx = bench_panel_context(session, int(index), True, event_job=job)
        return render(request, "histories/_bench_results.html", ctx)
    messages.success(request, f"Benchmark job {job['id']} queued for step {index}.")
    return redirect(f"{session.url}?step={index}#bench")


@require_GET
def bench_partial(request, sid):
    session = session_or_404(sid)
    ctx = bench_panel_context(session, int_param(request, "step", session.current),
                              services.can_edit(session, browser_actor(request)))
    return render(request, "histories/_bench_results.html", ctx)

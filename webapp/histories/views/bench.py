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
from webapp.runners.results import NOISY_IQR, fmt_speedup

from .. import integration, numbers, services
from ..actors import browser_actor
from ..plot import roofline_svg, speedup_svg
from ..present import fmt_time, job_view, pending
from .common import flash, int_param, refused, session_or_404

RECENT_JOBS = 20


def bench_context(session, steps, results, jobs, viewed, editable):
    """The panel's rows (one per step and runner, ``numbers.row``), the cross-hardware table,
    the speedup plot, a roofline per runner with measured peaks, and the viewed step's card."""
    runners = integration.runners()
    rows = []
    series = {}
    for index in sorted(results):
        if index not in steps:
            continue
        rows.extend(numbers.step_rows(results, steps, index))
        for runner, m in results[index]["by_runner"].items():
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
            cells.append({"median": fmt_time(m["median_s"]) if m else "",
                          "speedup": fmt_speedup(m.get("speedup")) if m else ""})
        cross.append({"index": index, "text": steps[index].text or "(root)", "cells": cells})
    rooflines = [{"runner": name, "svg": roofline_svg(name, d["peaks"], d["points"])}
                 for name, d in numbers.roofline_points(results, steps).items()]
    return {"session": session, "available": integration.available(), "not_available": integration.NOT_AVAILABLE,
            "runners": runners, "online": [r for r in runners if r.get("online")],
            "jobs": [job_view(j) for j in reversed(jobs[-RECENT_JOBS:])], "rows": rows, "cross": cross,
            "runner_names": runner_names, "plot": speedup_svg(series, path=_viewed_path(steps, viewed)), "rooflines": rooflines,
            "viewed": viewed, "editable": editable, "card": card_context(results, steps, viewed),
            "noisy_iqr": numbers.fmt_share(NOISY_IQR)}


def _viewed_path(steps, viewed) -> list:
    """The step indices from the root to the viewed step (the plot's line follows them)."""
    try:
        return services.path_indices(steps, viewed)
    except Refusal:
        return []


def card_context(results, steps, index) -> dict:
    """The result card of step ``index``: its rows, whether a job of it is pending, and its
    gpu binds (a step that has them is refused by the runners, ``numbers.gpu_binds_of``)."""
    return {"index": index, "rows": numbers.step_rows(results, steps, index),
            "pending": pending(results.get(index) or {}),
            "binds": numbers.gpu_binds_of(steps[index].ir) if index in steps else []}


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
            "results": results, "steps": steps}


def job_update_html(session, job: dict) -> str:
    """The out-of-band swaps for one job.update event (used by the websocket consumer):
    the benchmark panel (jobs, results, plots), the job's step's result card (a page viewing
    another step keeps its own, static/js/dojo.js) and the step's badge in the history tree."""
    ctx = bench_panel_context(session, session.current, False, event_job=job)
    ctx["oob"] = True
    index = job.get("step_index")
    if isinstance(index, int):
        ctx["card"] = card_context(ctx["results"], ctx["steps"], index)
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
        ctx["card"], ctx["card_oob"] = ctx["bench"]["card"], True
        return render(request, "histories/_bench_results.html", ctx)
    messages.success(request, f"Benchmark job {job['id']} queued for step {index}.")
    return redirect(f"{session.url}?step={index}#bench")


@require_GET
def bench_partial(request, sid):
    session = session_or_404(sid)
    ctx = bench_panel_context(session, int_param(request, "step", session.current),
                              services.can_edit(session, browser_actor(request)))
    return render(request, "histories/_bench_results.html", ctx)

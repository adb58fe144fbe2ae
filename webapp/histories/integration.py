"""The histories' view of the runners app (webapp.runners): runners, jobs, results.

Benchmarking is available when ``_services()`` gives the runners app's services (always,
in this project's settings).  Where it gives None (a server without benchmarking; the
tests use it), ``available()`` is False, ``runners()``, ``recent_jobs()`` and
``jobs_for()`` are empty, and ``submit`` raises ``Unavailable`` with NOT_AVAILABLE.  A
page never fails because the job table cannot be read: the listings log and return [].
"""
from __future__ import annotations

import logging

from webapp.runners import models as runner_models
from webapp.runners import results as runner_results
from webapp.runners import services as runner_services

log = logging.getLogger(__name__)

NOT_AVAILABLE = "benchmarking not available yet"


class Unavailable(Exception):
    """Benchmarking is not installed here.  Not a DojoError: a state of the web service,
    not of the tool chain; webapp/api/jobs.py answers it 503."""


def _services():
    """The runners app's services; None stands for a server without benchmarking."""
    return runner_services


def available() -> bool:
    return _services() is not None


def runners() -> list:
    """Runner dicts (name, status, online, labels, hardware, queue_depth, ...), [] if none."""
    services = _services()
    if services is None:
        return []
    try:
        return services.runners_list()
    except Exception:                                    # noqa: BLE001 - a page must not 500
        log.warning("cannot list runners", exc_info=True)
        return []


def recent_jobs(limit: int = 30) -> list:
    services = _services()
    if services is None:
        return []
    try:
        jobs = runner_models.Job.objects.select_related("runner").order_by("-id")[:limit]
        return [services.job_dict(j) for j in jobs]
    except Exception:                                    # noqa: BLE001
        log.warning("cannot list jobs", exc_info=True)
        return []


def submit(source: str, steps: list, sizes: dict, runner, kernel: str, session_id: str, step_index: int,
           options: dict | None = None, batch: str | None = None):
    """The job dict of a new benchmark job; Unavailable or ValueError (the reason) if refused."""
    services = _services()
    if services is None:
        raise Unavailable(NOT_AVAILABLE)
    extra = {"options": options} if options else {}
    if batch:
        extra["batch"] = batch
    job = services.submit_benchmark(source, steps, sizes=sizes or None, runner=runner or None,
                                    kernel=kernel or None, session_id=session_id, step_index=step_index,
                                    **extra)
    return services.job_dict(job)


def jobs_for(session_id: str) -> list:
    """Job dicts of a session, oldest first."""
    services = _services()
    if services is None:
        return []
    try:
        jobs = runner_models.Job.objects.select_related("runner").filter(session_id=session_id).order_by("id")
        return [services.job_dict(j) for j in jobs]
    except Exception:                                    # noqa: BLE001
        log.warning("cannot read jobs", exc_info=True)
        return []


# ----------------------------------------------------------------------------- results

def measurement(job: dict):
    """One finished job's measurement (``webapp.runners.results.measurement``) with
    ``hardware`` as one line of text; None unless it is done with a median."""
    m = runner_results.measurement(job)
    if m is not None:
        m["hardware"] = hardware_summary(m["hardware_dict"] or job.get("hardware") or {})
    return m


def hardware_summary(hw) -> str:
    """One line describing a hardware fingerprint dict."""
    if not isinstance(hw, dict) or not hw:
        return ""
    parts = []
    cpu = hw.get("cpu_model") or hw.get("cpu") or hw.get("processor")
    cores = hw.get("cores") or hw.get("cpu_count")
    if isinstance(cpu, dict):
        cores = cores or cpu.get("cores") or cpu.get("logical_cpus")
        cpu = cpu.get("model") or cpu.get("name")
    if cpu:
        parts.append(str(cpu))
    if cores:
        parts.append(f"{cores} cores")
    gpus = hw.get("gpus") or hw.get("gpu")
    if isinstance(gpus, list) and gpus:
        names = [g.get("name", str(g)) if isinstance(g, dict) else str(g) for g in gpus]
        parts.append(", ".join(names))
    elif isinstance(gpus, str) and gpus:
        parts.append(gpus)
    if not parts:
        for k in ("machine", "arch", "os", "host"):
            if hw.get(k):
                parts.append(str(hw[k]))
    return " · ".join(parts)[:200]


def results_by_step(jobs: list) -> dict:
    """{step_index: {"jobs": [job...], "measurements": [...], "by_runner": {runner: best}}}."""
    out = {}
    for job in jobs:
        idx = job.get("step_index")
        if not isinstance(idx, int):
            continue
        entry = out.setdefault(idx, {"jobs": [], "measurements": [], "by_runner": {}})
        entry["jobs"].append(job)
        m = measurement(job)
        if m:
            entry["measurements"].append(m)
            best = entry["by_runner"].get(m["runner"])
            if best is None or m["median_s"] < best["median_s"]:
                entry["by_runner"][m["runner"]] = m
    return out


def with_speedups(results: dict) -> dict:
    """Adds "speedup", "baseline_s" and "noisy" to every measurement, by the one definition
    (``webapp.runners.results.assign_speedups``: medians of one batch on one runner); a
    step's result on a runner ("by_runner") becomes its fastest quiet measurement (its
    fastest one when all are noisy, so a re-run that is quiet replaces a noisy result); and
    each step's entry gets its "best" measurement and "best_speedup"."""
    runner_results.assign_speedups([m for entry in results.values() for m in entry["measurements"]])
    for entry in results.values():
        for runner in list(entry["by_runner"]):
            mine = [m for m in entry["measurements"] if m["runner"] == runner]
            quiet = [m for m in mine if not m["noisy"]]
            entry["by_runner"][runner] = min(quiet or mine, key=lambda m: m["median_s"])
        if entry["by_runner"]:
            best = min(entry["by_runner"].values(), key=lambda m: m["median_s"])
            entry["best"] = best
            sp = [m["speedup"] for m in entry["by_runner"].values() if m["speedup"]]
            entry["best_speedup"] = max(sp) if sp else None
    return results


def speedups_by_job(results: dict) -> dict:
    """{job id: speedup or None} of every measurement in ``with_speedups`` results."""
    return {m["job"]: m.get("speedup") for entry in results.values() for m in entry["measurements"]}


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
from webapp.runners import services as runner_services

log = logging.getLogger(__name__)

NOT_AVAILABLE = "benchmarking not available yet"


class Unavailable(Exception):
    pass


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
           options: dict | None = None):
    """The job dict of a new benchmark job; Unavailable or ValueError (the reason) if refused."""
    services = _services()
    if services is None:
        raise Unavailable(NOT_AVAILABLE)
    extra = {"options": options} if options else {}
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
    """A summary of one finished job: median/min/max seconds, gflops, runner, hardware; or None."""
    result = job.get("result") if isinstance(job.get("result"), dict) else None
    if job.get("state") != "done" or not result:
        return None
    med = result.get("median_s")
    if not isinstance(med, (int, float)) or med <= 0:
        return None
    runner = job.get("runner") or result.get("runner") or "?"
    if isinstance(runner, dict):
        runner = runner.get("name") or "?"
    return {
        "job": job.get("id"),
        "runner": str(runner),
        "median_s": float(med),
        "min_s": _num(result.get("min_s")),
        "max_s": _num(result.get("max_s")),
        "gflops": _num(result.get("gflops")),
        "hardware": hardware_summary(result.get("hardware") or job.get("hardware") or {}),
        "finished": job.get("finished"),
    }


def _num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


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
    """Adds "speedup" (root median / step median on the same runner) to each best measurement."""
    root = results.get(0, {}).get("by_runner", {})
    for entry in results.values():
        for runner, m in entry["by_runner"].items():
            base = root.get(runner)
            m["speedup"] = base["median_s"] / m["median_s"] if base else None
        if entry["by_runner"]:
            best = min(entry["by_runner"].values(), key=lambda m: m["median_s"])
            entry["best"] = best
            sp = [m["speedup"] for m in entry["by_runner"].values() if m["speedup"]]
            entry["best_speedup"] = max(sp) if sp else None
    return results


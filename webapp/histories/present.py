"""How the pages show times, flop counts, jobs and the history tree.

Pure functions of plain values, step rows and job dicts (no requests, no queries), shared
by the editor, the runners page and the agents' live panel.  Guarantees:

* ``fmt_time(None)`` is "" and every other time has a unit (µs, ms or s);
* ``history_tree`` lists every step reachable from the root exactly once.
"""
from __future__ import annotations

from webapp.refusal import Refusal

from . import integration, services

FINAL_STATES = ("done", "failed", "lost", "cancelled")


def fmt_time(s) -> str:
    if s is None:
        return ""
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def time_range(m) -> str:
    """The spread of a measurement: its fastest and slowest repetition."""
    if m.get("min_s") is None or m.get("max_s") is None:
        return ""
    return f"{fmt_time(m['min_s'])} … {fmt_time(m['max_s'])}"


def fmt_flops(n) -> str:
    if n is None:
        return "—"
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} FLOP"


def pending(entry: dict) -> bool:
    """Whether a step's results entry still has a job queued or running."""
    return any(j.get("state") in ("queued", "running") for j in entry.get("jobs", []))


def job_view(job: dict) -> dict:
    """One row of a job list: id, state, step, runner, median and spread, error, verdict."""
    m = integration.measurement(job)
    result = job.get("result") if isinstance(job.get("result"), dict) else {}
    return {"id": job.get("id"), "state": job.get("state") or "?", "step": job.get("step_index"),
            "runner": job.get("runner") or (result or {}).get("runner") or job.get("requested_runner") or "any",
            "median": fmt_time(m["median_s"]) if m else "", "spread": time_range(m) if m else "",
            "error": job.get("error") or (result.get("error") if result else None) or "",
            "verdict": (result or {}).get("verdict") if job.get("state") == "done" else "",
            "final": job.get("final", job.get("state") in FINAL_STATES)}


def history_tree(steps: dict, current: int, viewed: int, results: dict) -> list:
    """Nested items: a chain of single children stays at one level; other children of a
    branching step are nested lists under it.  The main line follows the viewed step."""
    children = {}
    for s in steps.values():
        if s.parent is not None:
            children.setdefault(s.parent, []).append(s.index)
    on_path = set()
    try:
        on_path = set(services.path_indices(steps, viewed))
    except Refusal:
        pass

    def item(index):
        step = steps[index]
        r = results.get(index, {})
        best = r.get("best")
        return {"step": step, "index": index, "text": step.text or "(root)", "current": index == current,
                "viewed": index == viewed, "on_path": index in on_path, "branches": [],
                "best": best, "best_time": fmt_time(best["median_s"]) if best else "",
                "speedup": r.get("best_speedup"), "pending": pending(r)}

    def line(start):
        out = []
        index = start
        while index is not None:
            it = item(index)
            out.append(it)
            kids = sorted(children.get(index, []))
            if not kids:
                break
            main = next((k for k in kids if k in on_path), kids[0])
            it["branches"] = [line(k) for k in kids if k != main]
            index = main
        return out

    return line(0)

"""How the pages show times, flop counts, jobs and the history tree.

Pure functions of plain values, step rows and job dicts (no requests, no queries), shared
by the editor, the runners page and the agents' live panel.  Guarantees:

* ``fmt_time(None)`` is "" and every other time has a unit (µs, ms or s);
* ``history_tree`` lists every step reachable from the root exactly once, in an order
  that depends only on the steps, never on the viewed step.
"""
from __future__ import annotations

from webapp.refusal import Refusal

from . import integration, services

FINAL_STATES = ("done", "failed", "lost", "cancelled")


def fmt_time(s) -> str:
    """A duration in seconds as people read it: ns, µs, ms or s with three significant
    digits or so ("" for None)."""
    if s is None:
        return ""
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
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


def best_step(results: dict, steps: dict):
    """The best measured step: the lowest median on the runner that measured the most
    steps of ``steps`` (medians of one runner compare; a speedup needs a baseline that
    not every batch has).  None when nothing of ``steps`` is measured."""
    by_runner = {}
    for index, entry in results.items():
        if index not in steps:
            continue
        for runner, m in (entry.get("by_runner") or {}).items():
            by_runner.setdefault(runner, []).append((m["median_s"], index))
    if not by_runner:
        return None
    runner = max(by_runner, key=lambda r: (len(by_runner[r]), r))
    return min(by_runner[runner])[1]


def _path(steps: dict, index) -> list:
    if index is None or index not in steps:
        return []
    try:
        return services.path_indices(steps, index)
    except Refusal:
        return []


def history_tree(steps: dict, current: int, results: dict, viewed=None, runs=()) -> dict:
    """The history as nested items, in an order that depends only on the steps (never on
    the viewed one): a step's first child (lowest index) continues its line, later
    children are branches under it, in index order.

    ``runs`` (dicts with ``id``, ``agent``, ``state``, ``final`` and ``steps``: the set of
    step indices the agent run made) turn the steps of each run into run nodes: the
    children of a step that a run made (and everything under them) hang under one node
    per run, ``open`` while the run is active or when it holds the viewed step.

    Returns ``{"items", "best", "best_path", "count", "measured"}``: every step reachable
    from the root appears exactly once in ``items``; ``best`` is ``best_step`` and every
    step on its path has ``best_path`` set."""
    children = {}
    for s in steps.values():
        if s.parent is not None and s.parent in steps:
            children.setdefault(s.parent, []).append(s.index)
    for kids in children.values():
        kids.sort()
    group_of, run_of = {}, {}
    for run in sorted(runs, key=lambda r: r["id"]):
        run_of[run["id"]] = run
        for index in run["steps"]:
            if index in steps and index != 0:
                group_of.setdefault(index, run["id"])
    on_path = set(_path(steps, viewed))
    best = best_step(results, steps)
    best_path = set(_path(steps, best))

    def item(index):
        step = steps[index]
        r = results.get(index, {})
        top = r.get("best")
        return {"step": step, "index": index, "parent": step.parent, "text": step.text or "(root)",
                "current": index == current, "viewed": index == viewed, "on_path": index in on_path,
                "best_path": index in best_path, "is_best": index == best, "measured": bool(top),
                "best": top, "best_time": fmt_time(top["median_s"]) if top else "",
                "speedup": r.get("best_speedup"), "pending": pending(r), "branches": [], "runs": []}

    def run_node(run, parent, entries):
        lines = [line(k) for k in entries]
        inside = [it for ln in lines for it in walk_items(ln)]
        indices = {it["index"] for it in inside}
        best_inside = [it for it in inside if it["is_best"]]
        top = min((it for it in inside if it["measured"]),
                  key=lambda it: (not it["is_best"], it["best"]["median_s"]), default=None)
        return {"id": run["id"], "key": f"{run['id']}-{parent}", "agent": run["agent"], "state": run["state"],
                "final": run["final"], "lines": lines, "count": len(indices),
                "measured": sum(1 for it in inside if it["measured"]),
                "top": top, "has_best": bool(best_inside), "has_viewed": viewed in indices,
                "best_path": any(it["best_path"] for it in inside),
                "open": not run["final"] or viewed in indices}

    def line(start):
        out = []
        index = start
        while index is not None:
            it = item(index)
            out.append(it)
            group = group_of.get(index)
            plain, by_run = [], {}
            for k in children.get(index, []):
                g = group_of.get(k)
                if g is None or g == group:
                    plain.append(k)
                else:
                    by_run.setdefault(g, []).append(k)
            it["runs"] = [run_node(run_of[g], index, ks) for g, ks in sorted(by_run.items())]
            it["branches"] = [line(k) for k in plain[1:]]
            index = plain[0] if plain else None
        return out

    items = line(0) if 0 in steps else []
    return {"items": items, "best": best, "best_path": sorted(best_path), "count": len(steps),
            "measured": sum(1 for i in steps if results.get(i, {}).get("best"))}


def walk_items(items):
    """Every item of a line, its branches and its run nodes, depth first."""
    for it in items:
        yield it
        for br in it["branches"]:
            yield from walk_items(br)
        for node in it["runs"]:
            for ln in node["lines"]:
                yield from walk_items(ln)

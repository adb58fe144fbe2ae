"""Leaderboards from the runners' Job table: no models of their own.

A *board* is one (kernel, sizes, hardware fingerprint): every done and verified job of a
library kernel at those sizes on runners with that fingerprint
(``dojo_core.records.fingerprint_of_hardware`` of the hardware the result was stored with),
best (lowest median) first.  Entries rank by median: they ran on hardware with one
fingerprint, but in different sessions, at different times.  So an entry carries two ratios:

* ``speedup``: the one definition of webapp/runners/results.py, the untransformed kernel's
  median over the entry's, both timed in the same job or batch on the same runner (an
  untransformed run is 1x); None when its run timed no root alongside it.  The boards'
  ``best_speedup`` and ``best_known`` use only this one.
* ``speedup_across_runs``: the board's fastest untransformed median over the entry's, from
  runs that were not timed together (None without an untransformed run there); the page
  names it as such.

Entries link to their history step (``/s/ID/?step=N``) when the job came
from a history.

``job_record`` turns a job into the records.py format, so that the library builder
(dojo_core.library) works the same on the web app's measurements as on a local store.

Only trusted results rank (``_trusted``): done, verified (outputs compared with the
untransformed kernel by the runner), not a dry run, with the program hash the server
computed at submission; a job that claims a history step counts only when its program
hash is that step's (the sha256 of the step's canonical IR).  The kernel label itself
was derived from the job's source at submission (webapp.runners.services.library_label).
"""
from __future__ import annotations

from functools import lru_cache

from dojo_core import fingerprint_of_hardware, program_hash, text_hash
from dojo_core.kernels import load_kernel
from dojo_core.library import full_sizes, size_key
from webapp.histories.integration import hardware_summary
from webapp.histories.models import Step
from webapp.runners import results as runner_results
from webapp.runners.models import Job, Runner

MAX_JOBS = 20000


def _jobs(kernel=None):
    qs = (Job.objects.filter(state=Job.DONE).exclude(kernel="").exclude(program_hash="")
          .select_related("runner"))
    if kernel is not None:
        qs = qs.filter(kernel=kernel)
    return _trusted(list(qs.order_by("-id")[:MAX_JOBS]))


def _step_hashes(jobs) -> dict:
    """{(session id, step index): sha256 of that step's canonical IR} for the steps jobs claim."""
    wanted = {(j.session_id, j.step_index) for j in jobs
              if j.session_id and isinstance(j.step_index, int)}
    if not wanted:
        return {}
    sessions = {sid for sid, _ in wanted}
    rows = Step.objects.filter(session_id__in=sessions).values_list("session_id", "index", "ir")
    return {(sid, idx): text_hash(ir) for sid, idx, ir in rows if (sid, idx) in wanted}


def _trusted(jobs) -> list:
    """The jobs whose results may rank: see the module docstring."""
    steps = _step_hashes(jobs)
    out = []
    for job in jobs:
        if (job.options or {}).get("dry_run"):
            continue
        if job.session_id or job.step_index is not None:
            if steps.get((job.session_id, job.step_index)) != job.program_hash:
                continue
        out.append(job)
    return out


def _hardware(job) -> dict:
    result = job.result if isinstance(job.result, dict) else {}
    hw = result.get("hardware")
    if isinstance(hw, dict) and hw:
        return hw
    return (job.runner.hardware if job.runner_id and job.runner else None) or {}


def history_url(job):
    if job.session_id and isinstance(job.step_index, int):
        return f"/s/{job.session_id}/?step={job.step_index}"
    return None


@lru_cache(maxsize=512)
def _source_hash(kernel: str, skey: tuple) -> str:
    return program_hash(load_kernel(kernel, dict(skey)))


def job_record(job, site: str = ""):
    """The records.py record of a done, verified job of a library kernel, else None."""
    result = job.result if isinstance(job.result, dict) else None
    if job.state != "done" or not result or result.get("verified") is not True:
        return None
    med = result.get("median_s")
    if isinstance(med, bool) or not isinstance(med, (int, float)) or not med > 0:
        return None
    sizes = full_sizes(job.kernel, job.sizes or {})
    steps = job.steps if isinstance(job.steps, list) else None
    if sizes is None or steps is None or not all(isinstance(s, str) for s in steps):
        return None
    hw = _hardware(job)
    url = history_url(job)
    runner = job.runner
    return {
        "kernel": job.kernel, "sizes": sizes, "source_hash": _source_hash(job.kernel, size_key(sizes)),
        "steps": list(steps), "state_hash": job.program_hash or None,
        "median_s": float(med), "min_s": result.get("min_s"), "max_s": result.get("max_s"),
        "verified": True, "error": None, "fingerprint": fingerprint_of_hardware(hw),
        "runner": runner.name if runner else result.get("runner"), "hardware": hw,
        "labels": list(runner.labels or []) if runner else [],
        "compiler": result.get("compiler"), "flags": result.get("flags"),
        "threads": result.get("threads"), "target": result.get("target"),
        "agent": None, "history_url": (site + url) if url else None, "job": job.id,
        "time": job.finished.isoformat(timespec="seconds") if job.finished else None,
    }


def verified_records(kernel=None, site: str = "") -> list:
    out = []
    for job in _jobs(kernel):
        record = job_record(job, site)
        if record is not None:
            out.append(record)
    return out


def runner_infos() -> list:
    return [{"name": r.name, "labels": list(r.labels or []), "online": r.online,
             "fingerprint": fingerprint_of_hardware(r.hardware or {})} for r in Runner.objects.all()]


def _summary(hw: dict) -> str:
    return hardware_summary(hw) or "unknown hardware"


def leaderboards(kernel=None) -> list:
    """The boards of one kernel (or all), each {"kernel", "sizes", "fingerprint",
    "hardware", "runners", "baseline_s", "best_speedup", "entries"}, in kernel and size
    order, the boards of each size by best median."""
    boards = {}
    for job in _jobs(kernel):
        record = job_record(job)
        if record is None:
            continue
        key = (record["kernel"], size_key(record["sizes"]), record["fingerprint"])
        board = boards.setdefault(key, {"kernel": record["kernel"], "sizes": record["sizes"],
                                        "fingerprint": record["fingerprint"],
                                        "hardware": _summary(record["hardware"]),
                                        "runners": set(), "entries": []})
        board["runners"].add(record["runner"] or "?")
        board["entries"].append({
            "job": job.id, "median_s": record["median_s"], "min_s": record["min_s"],
            "max_s": record["max_s"], "steps": len(record["steps"]), "step_texts": record["steps"],
            "runner": record["runner"], "url": history_url(job),
            "session": job.session_id, "step": job.step_index, "gflops": (job.result or {}).get("gflops"),
            "finished": record["time"], "program_hash": job.program_hash,
            "measurement": runner_results.measurement({
                "id": job.id, "state": "done", "result": job.result, "batch": job.batch,
                "step_index": 0 if not record["steps"] else job.step_index, "runner": record["runner"]})})
    out = []
    for board in boards.values():
        measured = [e["measurement"] for e in board["entries"] if e["measurement"]]
        runner_results.assign_speedups(measured)
        for e in board["entries"]:
            m = e.pop("measurement")
            e["speedup"] = m.get("speedup") if m else None
        entries = distinct_programs(sorted(board["entries"], key=lambda e: (e["median_s"], e["job"])))
        base = [e["median_s"] for e in entries if e["steps"] == 0]
        board["baseline_s"] = min(base) if base else None
        for e in entries:
            e["speedup_across_runs"] = board["baseline_s"] / e["median_s"] if board["baseline_s"] else None
        speedups = [e["speedup"] for e in entries if e["speedup"]]
        board["best_speedup"] = max(speedups) if speedups else None
        across = [e["speedup_across_runs"] for e in entries if e["speedup_across_runs"]]
        board["best_speedup_across_runs"] = max(across) if across else None
        board["entries"], board["runners"] = entries, sorted(board["runners"])
        out.append(board)
    out.sort(key=lambda b: (b["kernel"], size_key(b["sizes"]), b["entries"][0]["median_s"]))
    return out


def distinct_programs(entries: list) -> list:
    """The first (best, when ``entries`` are sorted best first) entry of each program hash,
    in order, each with ``runs``: how many entries had that hash."""
    first, runs = {}, {}
    for e in entries:
        runs[e["program_hash"]] = runs.get(e["program_hash"], 0) + 1
        first.setdefault(e["program_hash"], e)
    return [{**e, "runs": runs[h]} for h, e in first.items()]


def best_known(boards=None) -> dict:
    """{kernel: [{"speedup", "hardware", "fingerprint", "sizes", "url"}, ...]}: per
    fingerprint its best speedup at any size, best first; only speedups by the one
    definition (over the root timed in the same job or batch on the same runner)."""
    best = {}
    for board in boards if boards is not None else leaderboards():
        if not board["best_speedup"]:
            continue
        top = max((e for e in board["entries"] if e["speedup"]), key=lambda e: e["speedup"])
        per_fp = best.setdefault(board["kernel"], {})
        have = per_fp.get(board["fingerprint"])
        if have is None or top["speedup"] > have["speedup"]:
            per_fp[board["fingerprint"]] = {"speedup": top["speedup"], "hardware": board["hardware"],
                                            "fingerprint": board["fingerprint"], "sizes": board["sizes"],
                                            "url": top["url"], "runner": top["runner"]}
    return {k: sorted(v.values(), key=lambda x: -x["speedup"]) for k, v in best.items()}


def targets() -> list:
    """What a library can be built for: runner names, labels and fingerprints with records."""
    seen, out = set(), []
    runners = runner_infos()
    measured = {fp for fp in (b["fingerprint"] for b in leaderboards())}
    for r in runners:
        for value, kind in [(r["name"], "runner")] + [(l, "label") for l in r["labels"]]:
            if value not in seen:
                seen.add(value)
                out.append({"value": value, "kind": kind,
                            "measured": r["fingerprint"] in measured})
    for fp in sorted(measured - seen):
        out.append({"value": fp, "kind": "fingerprint", "measured": True})
    return out

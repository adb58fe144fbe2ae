"""The dataset of every history in the database: (state, action, measured time, runner).

``records()`` yields one measurement record (dojo_core/records.py format) per finished
benchmark job of a history step (``done`` or ``failed``; queued, lost and cancelled jobs
measured nothing), in session then job order, with what rebuilding the transition needs
without a replay: ``source`` (the root IR) and ``state_ir`` (the stored, canonical IR of
the step's parent; null for the root), plus ``session``, ``step`` and ``job``.  Failed
jobs are kept with ``median_s`` null and their error (a learner may want the negatives).

``dataset_lines()`` turns them into JSON lines with dojo_core.agents.dataset's
``export_records`` (format ``perfdojo-transitions``: state_ir, action, median_s, runner,
...).  It reads the database in
chunks, so it streams (``GET /api/dataset.jsonl``, ``manage.py export_dataset``).
"""
from __future__ import annotations

from typing import Iterator

from dojo_core import text_hash
from dojo_core.agents import export_records
from webapp.histories.models import Session
from webapp.histories.services import path_indices
from webapp.refusal import Refusal
from webapp.runners.models import Job

from .models import AgentRun

CHUNK = 500


def _agent_of_jobs() -> dict:
    out = {}
    for agent, trials in AgentRun.objects.values_list("agent", "trials").iterator(chunk_size=CHUNK):
        for t in trials or []:
            if isinstance(t, dict) and isinstance(t.get("job"), int):
                out[t["job"]] = agent
    return out


def records() -> Iterator[dict]:
    agents = _agent_of_jobs()
    session = steps = None
    jobs = (Job.objects.filter(session_id__isnull=False, step_index__isnull=False, state__in=("done", "failed"))
            .select_related("runner").order_by("session_id", "id"))
    for job in jobs.iterator(chunk_size=CHUNK):
        if session is None or session.id != job.session_id:
            session = Session.objects.filter(id=job.session_id).first()
            steps = {s.index: s for s in session.steps.all()} if session is not None else {}
        step = steps.get(job.step_index)
        if session is None or step is None:
            continue
        try:
            path = path_indices(steps, step.index)
        except Refusal:
            continue
        result = job.result if isinstance(job.result, dict) else {}
        if result.get("imported_from"):
            continue            # a copy made by a fork or an import: the original is a record
        parent = steps[step.parent] if step.parent is not None else None
        yield {
            "kernel": session.kernel or None, "sizes": session.sizes, "source_hash": text_hash(session.source),
            "steps": [steps[i].text for i in path[1:]], "state_hash": text_hash(step.ir),
            "median_s": result.get("median_s") if job.state == "done" else None,
            "min_s": result.get("min_s"), "max_s": result.get("max_s"),
            "verified": bool(result.get("verified", False)) and job.state == "done",
            "error": result.get("error") or (None if job.state == "done" else job.state),
            "fingerprint": (job.runner.hardware or {}).get("fingerprint") if job.runner_id else None,
            "runner": job.runner.name if job.runner_id else result.get("runner"),
            "hardware": result.get("hardware"), "compiler": result.get("compiler"),
            "flags": result.get("flags"), "threads": result.get("threads"),
            "agent": agents.get(job.id), "history_url": f"/s/{session.id}/?step={step.index}",
            "time": (job.finished or job.created).isoformat(timespec="seconds"),
            "session": session.id, "step": step.index, "job": job.id,
            "source": session.source, "state_ir": parent.ir if parent is not None else None,
        }


def dataset_lines() -> Iterator[str]:
    """JSON lines, each ending in a newline."""
    for line in export_records(records()):
        yield line if line.endswith("\n") else line + "\n"

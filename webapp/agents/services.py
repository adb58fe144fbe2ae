"""Starting, stopping and describing agent runs (used by the editor and the JSON API).

Guarantees:

* Every refusal is a ``Refusal(status, reason)`` (400 bad agent, budget, step or options,
  403 not the owner, 404 unknown session, step or run, 409 no runner online or another
  run still active on the session) and nothing is stored because of it.
* A run is queued on the Celery queue ``settings.DOJO_AGENTS_QUEUE`` once its row is
  committed; a broker that refuses the task makes the run ``failed`` with the reason.
* Stopping is idempotent: a final run is returned unchanged; a queued run stops at once;
  a running one stops at its agent's next ``should_stop`` poll.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webapp.histories import services as histories
from webapp.refusal import Refusal
from webapp.runners import dispatch
from webapp.runners.services import clean_options, online_runners, pick_runner
from webapp.runners.shapes import iso

from . import TASK_NAME, catalog, live
from .models import AgentRun

log = logging.getLogger(__name__)


def queue() -> str:
    return getattr(settings, "DOJO_AGENTS_QUEUE", "agents")


def max_budget() -> int:
    return int(getattr(settings, "DOJO_AGENT_MAX_BUDGET", 1000))


# ============================================================================ checks

def _agent_name(agent) -> str:
    names = catalog.agent_names()
    if not isinstance(agent, str) or agent not in names:
        shown = str(agent)[:40] if agent is not None else "nothing"
        known = ", ".join(names) if names else "none installed"
        raise Refusal(400, f"unknown agent {shown!r} (known: {known})")
    return agent


def _budget(value) -> int:
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 10:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refusal(400, f"budget must be a whole number of measurements, not {str(value)[:40]!r}")
    if not 1 <= value <= max_budget():
        raise Refusal(400, f"budget must be between 1 and {max_budget()} measurements (the baseline counts as one)")
    return value


def _runner(value) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str) or len(value) > 64:
        raise Refusal(400, "runner must be a runner name or label, or null/empty for any online runner")
    value = value.strip()
    picked = pick_runner(value or None)
    if picked is not None and (picked.hardware or {}).get("emulated"):
        raise Refusal(409, f"runner {picked.name} is emulated ({picked.hardware['emulated'].get('target')} "
                           f"under qemu): it checks correctness but gives no times, and an agent "
                           f"ranks its steps by measured time")
    if picked is None:
        online = sorted(r.name for r in online_runners())
        if not value:
            raise Refusal(409, "no runner is online to measure the agent's steps")
        raise Refusal(409, f"no online runner matches {value!r} ("
                           + (f"online: {', '.join(online)})" if online else "no runner is online)"))
    return value


def _seed(value) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not -2**31 <= value < 2**31:
        raise Refusal(400, "seed must be an integer")
    return value


def _job_options(value) -> dict:
    if value is None:
        return {}
    try:
        options = clean_options(value)
    except ValueError as exc:
        raise Refusal(400, str(exc)) from None
    options.pop("dry_run", None)
    return options


# ============================================================================ start, stop

def start_run(session, actor, agent, budget, runner=None, step=None, seed=None, options=None) -> AgentRun:
    """Queue a run of ``agent`` from ``step`` (default: the current step) of ``session``."""
    histories.require_owner(session, actor)
    name = _agent_name(agent)
    budget = _budget(budget)
    seed = _seed(seed)
    job_options = _job_options(options)
    steps = histories.steps_of(session)
    start = histories.get_step(session, session.current if step in (None, "") else step, steps)
    histories.program_at(session, start.index, steps)          # must still replay
    runner = _runner(runner)
    with transaction.atomic():
        active = AgentRun.objects.filter(session=session, state__in=AgentRun.ACTIVE).first()
        if active is not None:
            raise Refusal(409, f"agent run {active.id} ({active.agent}) is still {active.state} on this "
                               f"session; stop it first")
        run = AgentRun.objects.create(session=session, start_step=start.index, agent=name, budget=budget,
                                      runner=runner, seed=seed, job_options=job_options)
        run_id = run.id
        transaction.on_commit(lambda: _send(run_id))
    return run


def _send(run_id: int) -> None:
    try:
        dispatch.app().send_task(TASK_NAME, args=[run_id], queue=queue(), routing_key=queue(),
                                 retry=True, retry_policy={"max_retries": 3, "interval_start": 0.1,
                                                           "interval_step": 0.5, "interval_max": 2})
    except Exception as exc:                                     # noqa: BLE001 - recorded on the run
        log.warning("could not queue agent run %s", run_id, exc_info=True)
        AgentRun.objects.filter(id=run_id, state=AgentRun.QUEUED).update(
            state=AgentRun.FAILED, finished=timezone.now(), error=f"could not queue the run: {exc}")
    live.notify(run_id)


def stop_run(run: AgentRun, actor) -> AgentRun:
    histories.require_owner(run.session, actor)
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().select_related("session").get(id=run.id)
        if run.final:
            return run
        run.stop_requested = True
        fields = ["stop_requested"]
        if run.state == AgentRun.QUEUED:
            run.state, run.finished = AgentRun.STOPPED, timezone.now()
            fields += ["state", "finished"]
        run.save(update_fields=fields)
        run_id = run.id
        transaction.on_commit(lambda: live.notify(run_id))
    return run


def get_run(run_id) -> AgentRun:
    try:
        n = int(run_id)
    except (TypeError, ValueError):
        raise Refusal(404, f"no agent run {str(run_id)[:40]!r}") from None
    run = AgentRun.objects.select_related("session").filter(id=n).first()
    if run is None:
        raise Refusal(404, f"no agent run {n}")
    return run


# ============================================================================ JSON

def run_dict(run: AgentRun) -> dict:
    """The JSON of ``GET /api/agents/RUN``.  ``best.speedup`` is the one speedup of the
    results table (over the root timed in the same batch on the same runner: ``live.best_speedup``);
    ``best.speedup_over_start`` is the agent's own search ratio (its start step's median,
    ``baseline_median_s``, over the best median), named so that it is never taken for it."""
    best = None
    if run.best_step is not None:
        step = run.session.steps.filter(index=run.best_step).first()
        best = {"step": run.best_step, "text": step.text if step else None,
                "median_s": run.best_median_s, "speedup": live.best_speedup(run),
                "speedup_over_start": run.speedup,
                "url": f"/s/{run.session_id}/?step={run.best_step}"}
    return {
        "id": run.id, "url": f"/api/agents/{run.id}", "session": run.session_id,
        "session_url": f"/s/{run.session_id}/", "agent": run.agent, "budget": run.budget,
        "runner": run.runner or None, "step": run.start_step, "seed": run.seed,
        "options": run.job_options, "state": run.state, "final": run.final,
        "stop_requested": run.stop_requested, "created": iso(run.created),
        "started": iso(run.started), "finished": iso(run.finished), "error": run.error or None,
        "measured": run.measurements, "measurements": list(run.trials or []),
        "baseline_median_s": run.baseline_median_s, "best": best,
    }

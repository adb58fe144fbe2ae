"""Executing one agent run (the body of the Celery task ``perfdojo.agent_run``).

``execute_run(run_id)`` claims a queued run (a run that is not queued is left alone, so a
repeated message does nothing), runs the dojo_core agent from the run's start step with
a ``HistoryEvaluator``, records progress on the row after every measurement and
announces it (``live.notify``), and ends the run ``done``, ``stopped`` (stop requested,
or the worker shutting down) or ``failed`` (with the error).  At the end the session's
current step is the best step found.  It never raises.
"""
from __future__ import annotations

import logging
import os
import socket
import threading

from django.db import close_old_connections, transaction
from django.utils import timezone

from webapp.histories import services as histories
from webapp.refusal import Refusal

from . import catalog, live
from .evaluator import HistoryEvaluator
from .models import AgentRun

log = logging.getLogger(__name__)

SHUTTING_DOWN = threading.Event()          # set by the worker on warm shutdown: runs stop


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _claim(run_id: int):
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().filter(id=run_id).first()
        if run is None or run.state != AgentRun.QUEUED:
            return None
        if run.stop_requested:
            run.state, run.finished = AgentRun.STOPPED, timezone.now()
            run.save(update_fields=["state", "finished"])
            return None
        run.state, run.started, run.worker = AgentRun.RUNNING, timezone.now(), worker_name()
        run.save(update_fields=["state", "started", "worker"])
    return AgentRun.objects.select_related("session", "session__owner").get(id=run_id)


def stop_wanted(run_id: int) -> bool:
    if SHUTTING_DOWN.is_set():
        return True
    return bool(AgentRun.objects.filter(id=run_id).values_list("stop_requested", flat=True).first())


def execute_run(run_id: int) -> str:
    """Run it; the final state."""
    try:
        run = _claim(int(run_id))
        if run is None:
            return "skipped"
        live.notify(run.id)
        return _search(run)
    finally:
        close_old_connections()


def _search(run: AgentRun) -> str:
    should_stop = lambda: stop_wanted(run.id)                      # noqa: E731
    evaluator = HistoryEvaluator(run, stop_requested=should_stop, on_new_steps=lambda: live.notify(run.id))
    trials = []

    def on_event(event):
        trial, best = event.trial, event.best
        m = trial.measurement
        trials.append({"step": evaluator.index_of.get(tuple(trial.steps)),
                       "job": evaluator.job_of.get(tuple(trial.steps)), "depth": len(trial.steps),
                       "median_s": m.median_s, "verified": m.verified, "error": m.error, "source": m.source})
        fields = {"measurements": event.index + 1, "trials": list(trials)}
        if event.index == 0:
            fields["baseline_median_s"] = trial.median_s
        if best.median_s is not None:
            fields["best_step"] = evaluator.index_of.get(tuple(best.steps))
            fields["best_median_s"] = best.median_s
        AgentRun.objects.filter(id=run.id).update(**fields)
        live.notify(run.id)

    state, error = AgentRun.DONE, ""
    try:
        agent = catalog.make(run.agent)
        root = histories.program_at(run.session, run.start_step)
        result = agent.search(root, evaluator, run.budget, seed=run.seed, on_event=on_event,
                              should_stop=should_stop)
        if result.stopped or should_stop():
            state = AgentRun.STOPPED
            if SHUTTING_DOWN.is_set() and not AgentRun.objects.filter(id=run.id, stop_requested=True).exists():
                error = "the agents worker was stopped"
    except KeyError:
        state, error = AgentRun.FAILED, f"agent {run.agent!r} is not installed on this worker"
    except Refusal as r:
        state, error = AgentRun.FAILED, r.reason
    except Exception as exc:                                       # noqa: BLE001 - recorded on the run
        log.exception("agent run %s failed", run.id)
        state, error = AgentRun.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
    AgentRun.objects.filter(id=run.id).update(state=state, error=error, finished=timezone.now())
    best = AgentRun.objects.filter(id=run.id).values_list("best_step", flat=True).first()
    if best is not None:
        try:
            histories.set_current(run.session, evaluator.actor, best)
        except Refusal:
            pass
    live.notify(run.id)
    return state


def fail_orphans(host: str | None = None) -> int:
    """Runs left ``running`` by a worker of this host that no longer exists become failed."""
    host = host or socket.gethostname()
    n = 0
    for run in AgentRun.objects.filter(state=AgentRun.RUNNING, worker__startswith=f"{host}:"):
        pid = run.worker.rpartition(":")[2]
        if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
            continue
        n += AgentRun.objects.filter(id=run.id, state=AgentRun.RUNNING).update(
            state=AgentRun.FAILED, finished=timezone.now(), error="the agents worker running it stopped")
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

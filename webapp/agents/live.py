"""Streaming agent runs into open editor pages.

``notify(run_id)`` announces that a run changed (a new step, a measurement, its state):
the message ``{"type": "agent.update", "run": ID, "session": SID}`` goes to the Channels
group ``session-<SID>``, whose consumer calls ``render_update`` and sends the result:
htmx out-of-band swaps of the history tree (``#tree``) and of the run list
(``#agent-runs``), both rendered from the database at that moment, so a lost or
repeated message never leaves the page wrong for longer than the next one.

The agents worker is another process: with the embedded in-memory channel layer its
group_send would reach no websocket, so a worker started with ``--server URL`` sets
``SERVER_URL`` and notifies through the server instead (``POST /api/agents/ID/notify``,
signed with ``signature(run_id)``, an HMAC under SECRET_KEY), which pushes from its own
process.  ``notify`` never raises: the change is already committed.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import urllib.request

from django.conf import settings
from django.template.loader import render_to_string

from webapp.histories import integration
from webapp.histories.models import Session
from webapp.histories.present import fmt_time
from webapp.histories.push import send_to_session
from webapp.histories.tree import tree_oob_html
from webapp.runners.results import fmt_speedup

from .models import AgentRun

log = logging.getLogger(__name__)

SERVER_URL = None              # set by the agents worker: notify through this server
SIGNATURE_HEADER = "X-Dojo-Agent-Signature"


def signature(run_id: int) -> str:
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, f"perfdojo-agent-run:{int(run_id)}".encode(), hashlib.sha256).hexdigest()


def signature_ok(run_id: int, given: str) -> bool:
    return bool(given) and hmac.compare_digest(signature(run_id), given)


def notify(run_id: int) -> None:
    try:
        if SERVER_URL:
            _notify_server(run_id)
        else:
            push(run_id)
    except Exception:                                            # noqa: BLE001 - never fail the run
        log.warning("could not announce agent run %s", run_id, exc_info=True)


def _notify_server(run_id: int) -> None:
    req = urllib.request.Request(f"{SERVER_URL.rstrip('/')}/api/agents/{int(run_id)}/notify", data=b"{}",
                                 method="POST", headers={"Content-Type": "application/json",
                                                         SIGNATURE_HEADER: signature(run_id)})
    with urllib.request.urlopen(req, timeout=5) as resp:
        resp.read()


def push(run_id: int) -> None:
    """group_send the run's agent.update from this process."""
    sid = AgentRun.objects.filter(id=run_id).values_list("session_id", flat=True).first()
    if sid is not None:
        send_to_session(sid, {"type": "agent.update", "run": int(run_id), "session": sid})


# ============================================================================ rendering

def best_job(run):
    """The job that measured the run's best step (its fastest trial there), or None."""
    trials = [t for t in run.trials or [] if t.get("step") == run.best_step and t.get("job")
              and isinstance(t.get("median_s"), (int, float))]
    return min(trials, key=lambda t: t["median_s"])["job"] if trials else None


def best_speedup(run):
    """The speedup of the run's best step by the one definition of webapp/runners/results.py
    (its best job's median against the root's, measured in the same batch on the same
    runner), exactly as the results table shows it; None when no such baseline exists."""
    job = best_job(run)
    if job is None:
        return None
    results = integration.with_speedups(integration.results_by_step(integration.jobs_for(run.session_id)))
    return integration.speedups_by_job(results).get(job)


def run_view(run, speedups: dict | None = None) -> dict:
    """What the run list shows of one run.  Its speedup is the best step's job's speedup by
    the results table's definition (``speedups``: ``integration.speedups_by_job``)."""
    speedup = (speedups or {}).get(best_job(run))
    return {"id": run.id, "agent": run.agent, "state": run.state, "final": run.final,
            "budget": run.budget, "measured": run.measurements, "runner": run.runner or "any runner",
            "start_step": run.start_step, "stop_requested": run.stop_requested, "error": run.error,
            "best_step": run.best_step, "best_time": fmt_time(run.best_median_s) if run.best_median_s else "",
            "speedup": fmt_speedup(speedup)}


def runs_context(session) -> dict:
    """The run list of the agents' panel (``run_view`` of the newest runs); the session's
    results are read only when it has a run with a best step."""
    latest = AgentRun.latest(session)
    speedups = {}
    if any(r.best_step is not None for r in latest):
        speedups = integration.speedups_by_job(
            integration.with_speedups(integration.results_by_step(integration.jobs_for(session.id))))
    runs = [run_view(r, speedups) for r in latest]
    return {"session": session, "runs": runs, "active": any(not r["final"] for r in runs)}


def tree_html(session) -> str:
    """The history tree (agent runs as run nodes) and the step count as out-of-band swaps."""
    return tree_oob_html(session)


def render_update(sid: str, event: dict | None = None) -> str:
    """The out-of-band swaps for one agent.update on session ``sid`` ("" if it is gone)."""
    session = Session.objects.filter(id=sid).first()
    if session is None:
        return ""
    runs = render_to_string("agents/_runs.html", {**runs_context(session), "oob": True})
    return tree_html(session) + runs


"""The runner's Celery worker process: ``python -m runners.worker CONFIG.json``.

Started (and restarted) by the runner daemon (``runners.daemon``); dies with it
(PR_SET_PDEATHSIG).  Consumes only the runner's own queue, one job at a time
(solo pool), with late acknowledgement.  CONFIG is the JSON file the daemon
writes with mode 0600 (server, secret, queue, broker, state dir, limits).

A delivered job starts only after the server confirms that its ticket's attempt was
not started yet (``not_to_start``): a duplicate or stale delivery is dropped before
anything runs, instead of running until its refused claim stops it.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import sys

log = logging.getLogger(__name__)


def die_with_parent(parent: int) -> None:
    """On Linux, this process is killed when ``parent`` dies (and exits at once when it
    already has); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def build(cfg: dict):
    from .celery_app import TASK_NAME, make_app
    from .execute import execute

    app = make_app(cfg["broker_url"], cfg.get("broker_options"))
    started = set()                                   # (job, attempt) this worker has started

    @app.task(name=TASK_NAME, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
    def run_job(job_id, published=None, ticket=None, signature=None, **_later_fields):
        why = not_to_start(cfg, int(job_id), ticket, signature, started)
        if why:
            log.info("job %s: not started: %s", job_id, why)
            return f"skipped: {why}"
        return execute(int(job_id), cfg, published=published, ticket=ticket, signature=signature)

    return app


def not_to_start(cfg: dict, job_id: int, ticket, signature, started: set) -> str | None:
    """Why a ticket's job must not start here (a delivery of a job already started, here or
    anywhere), asked of the server before the job runs; None to go ahead.  A ticket that is
    not the server's is left to execute(), which refuses it; an unreachable server is
    left to the claim."""
    from .client import Client, Refused, Unreachable
    from .tickets import duplicate_reason, key_from_secret, verify

    if ticket is None or not verify(key_from_secret(cfg["secret"]), ticket, signature):
        return None
    attempt = ticket.get("attempt")
    if (job_id, attempt) in started:
        return f"attempt {attempt} already ran on this runner"
    try:
        job = Client(cfg["server"], cfg["secret"]).request("GET", f"/api/jobs/{job_id}", patience=5)
    except (Refused, Unreachable) as exc:
        log.info("job %s: could not ask the server before starting (%s)", job_id, exc)
        job = None
    why = duplicate_reason(job, attempt, cfg.get("name"))
    if why is None:
        if len(started) > 10000:
            started.clear()
        started.add((job_id, attempt))
    return why


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        cfg = json.load(f)
    if cfg.get("parent_pid"):
        die_with_parent(int(cfg["parent_pid"]))
    if cfg.get("sandbox_user"):
        from . import sandbox
        sandbox.set_user(*cfg["sandbox_user"])          # benchmarks run as that user, not root
    level = cfg.get("log_level", "WARNING").upper()
    logging.basicConfig(level=level, format=f"[runner {cfg['name']} worker] %(levelname)s %(message)s")
    app = build(cfg)
    args = ["worker", "-Q", cfg["queue"], "-n", f"{cfg['name']}@%h", "-c", "1", "-P", "solo",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-l", level]
    if level in ("WARNING", "ERROR", "CRITICAL"):
        args.insert(0, "-q")                   # celery's global --quiet: no banner
    app.worker_main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

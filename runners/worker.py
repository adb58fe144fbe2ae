"""The runner's Celery worker process: ``python -m runners.worker CONFIG.json``.

Started (and restarted) by the runner daemon (``runners.daemon``); dies with it
(PR_SET_PDEATHSIG).  Consumes only the runner's own queue, one job at a time
(solo pool), with late acknowledgement.  CONFIG is the JSON file the daemon
writes with mode 0600 (server, secret, queue, broker, state dir, limits).
"""
from __future__ import annotations

import json
import logging
import os
import signal
import sys


def _die_with_parent(parent: int) -> None:
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

    @app.task(name=TASK_NAME, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
    def run_job(job_id, published=None, ticket=None, signature=None, **_later_fields):
        return execute(int(job_id), cfg, published=published, ticket=ticket, signature=signature)

    return app


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        cfg = json.load(f)
    if cfg.get("parent_pid"):
        _die_with_parent(int(cfg["parent_pid"]))
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

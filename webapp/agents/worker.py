"""The agents worker: ``python -m webapp.agents.worker [--server URL] [--concurrency N]``.

A Celery worker (thread pool, ``--concurrency`` runs at a time, default 2) consuming the
queue ``settings.DOJO_AGENTS_QUEUE`` ("agents") on the server's broker (the embedded
safefs:// folder or Redis) with the server's database; each task is one agent run
(``tasks.execute_run``).  With ``--server`` (what ``make run`` passes) progress is
announced through that server, which is what reaches the pages when the channel layer
is the in-memory one.  On start it fails the runs a dead worker of this host left
``running``; on SIGTERM its runs stop at their next measurement (state ``stopped``).
``spawn(server_url)`` starts it as a child process that dies with its parent.
"""
from __future__ import annotations

import argparse
import atexit
import logging
import os
import subprocess
import sys

from webapp.children import local_url, stop_child

from . import TASK_NAME


def build_app():
    from django.conf import settings

    from runners.celery_app import make_app

    from .tasks import execute_run
    app = make_app(settings.DOJO_BROKER_URL, settings.DOJO_BROKER_OPTIONS, name="perfdojo-agents")

    @app.task(name=TASK_NAME, acks_late=False, ignore_result=True)
    def agent_run(run_id):
        return execute_run(int(run_id))

    return app


def _on_shutdown(**_):
    from .tasks import SHUTTING_DOWN
    SHUTTING_DOWN.set()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webapp.agents.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("DOJO_SERVER_URL") or None,
                        help="announce progress through this PerfDojo server (http://HOST:PORT)")
    parser.add_argument("--concurrency", type=int, default=int(os.environ.get("DOJO_AGENT_CONCURRENCY", "2")))
    parser.add_argument("--parent", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--log-level", default=os.environ.get("DOJO_AGENT_LOG", "WARNING"))
    args = parser.parse_args(argv)
    if args.parent:
        from runners.worker import die_with_parent
        die_with_parent(args.parent)
    level = args.log_level.upper()
    logging.basicConfig(level=level, format="[agents worker] %(levelname)s %(message)s")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django
    django.setup()
    from celery.signals import worker_shutting_down
    from django.conf import settings

    from . import live
    from .tasks import fail_orphans
    live.SERVER_URL = args.server
    fail_orphans()
    worker_shutting_down.connect(_on_shutdown, weak=False)
    app = build_app()
    queue = settings.DOJO_AGENTS_QUEUE
    cmd = ["worker", "-Q", queue, "-n", f"agents-{os.getpid()}@%h", "-c", str(max(1, args.concurrency)),
           "-P", "threads", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", level]
    if level in ("WARNING", "ERROR", "CRITICAL"):
        cmd.insert(0, "-q")
    app.worker_main(cmd)
    return 0


def spawn(server_url: str, env=None) -> subprocess.Popen:
    """Start the agents worker as a child of this process (it dies with it)."""
    cmd = [sys.executable, "-m", "webapp.agents.worker", "--server", server_url, "--parent", str(os.getpid())]
    return subprocess.Popen(cmd, env=env)


def start_for_launch(host: str, port: int) -> subprocess.Popen:
    """What ``make run`` (webapp/launch.py) calls once the server listens: the worker,
    announcing through that server, stopped (SIGTERM, then SIGKILL after 20 s) at exit."""
    proc = spawn(local_url(host, port))
    atexit.register(stop_child, proc)
    return proc


if __name__ == "__main__":
    sys.exit(main())

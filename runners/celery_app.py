"""The Celery app shared by the server (producer) and the runner worker (consumer).

No Django here: a runner on another host needs only this package, kombu and
celery.  The task message carries the job id, the time it was published
(``kwargs.published``) and the job's signed ticket (``kwargs.ticket``,
``kwargs.signature``: ``runners.tickets``), so the runner can start at once; the
database on the server stays the source of truth, and the runner still claims the
job over HTTP (atomically) before its result counts.

``make_app(broker_url, broker_options)`` builds an app; ``TASK_NAME`` is the one
task a runner consumes.  The worker side registers it with ``acks_late`` and
``reject_on_worker_lost`` so that a broker which keeps unacknowledged messages
(Redis) redelivers a job whose worker died; with the filesystem broker a
fetched message is gone, and the server's reaper requeues the job instead.
"""
from __future__ import annotations

import time

from celery import Celery

from . import safefs  # noqa: F401 - registers the safefs:// alias

TASK_NAME = "perfdojo.run_job"


def queue_for(name: str) -> str:
    """The Celery queue (and exchange) of a runner: ``runner-<name>``."""
    return f"runner-{name}"


def make_app(broker_url: str, broker_options: dict | None = None, name: str = "perfdojo") -> Celery:
    app = Celery(name, broker=broker_url, backend=None, set_as_current=False)
    options = dict(broker_options or {})
    app.conf.update(
        broker_transport_options=options,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,      # reconnect forever after a network loss
        broker_heartbeat=0,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_create_missing_queues=True,
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        enable_utc=True,
    )
    return app


def send_job(app: Celery, job_id: int, queue: str, ticket: dict | None = None,
             signature: str | None = None) -> None:
    """Publish one job message to a runner's queue: the job id, the time it was published
    (``kwargs.published``, Unix seconds; the runner reports it back in the result's
    ``timing``) and, when given, the signed ticket (``runners.tickets``)."""
    kwargs = {"published": time.time()}
    if ticket is not None:
        kwargs.update(ticket=ticket, signature=signature)
    app.send_task(TASK_NAME, args=[int(job_id)], kwargs=kwargs,
                  queue=queue, routing_key=queue,
                  retry=True, retry_policy={"max_retries": 3, "interval_start": 0.1,
                                            "interval_step": 0.5, "interval_max": 2})

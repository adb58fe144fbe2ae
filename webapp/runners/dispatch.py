"""Publishing job ids to runner queues (the server's side of Celery).

The Celery app is built lazily from settings (DOJO_BROKER_URL, DOJO_BROKER_OPTIONS)
and shared by the process; ``reset()`` drops it (tests that change the broker).
A failed publish is logged and left to the reaper, which re-sends jobs that
were never dispatched: the database, not the broker, holds the truth.
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings

log = logging.getLogger(__name__)

_lock = threading.Lock()
_app = None


def app():
    global _app
    with _lock:
        if _app is None:
            from runners.celery_app import make_app
            _app = make_app(settings.DOJO_BROKER_URL, settings.DOJO_BROKER_OPTIONS, name="perfdojo-server")
        return _app


def reset() -> None:
    global _app
    with _lock:
        if _app is not None:
            try:
                _app.close()
            except Exception:                                   # noqa: BLE001
                pass
        _app = None


def send(job_id: int, queue: str, ticket: dict | None = None, signature: str | None = None) -> bool:
    """Publish one job (its id, and its signed ticket when given) to a queue; False
    (logged) when the broker refused."""
    from runners.celery_app import send_job
    try:
        send_job(app(), job_id, queue, ticket, signature)
        return True
    except Exception:                                            # noqa: BLE001
        log.warning("could not dispatch job %s to %s; the reaper will retry", job_id, queue,
                    exc_info=True)
        return False

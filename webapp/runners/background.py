"""Background work of the web process: the reaper loop, run on the ASGI server's event loop.

``with_background(application)`` wraps the ASGI application; the first scope it
sees starts the job-update sender (``notify.start_sender``: requests only queue
their Channels messages) and ``reaper_loop`` as tasks on the server's loop (the
reaper every DOJO_REAPER_INTERVAL seconds; 0 turns it off).  The pass itself runs in a worker
thread through ``sync_to_async``, so its notifications (``async_to_sync``
group_send) run on the server's loop: that is what lets the in-memory channel
layer of the embedded mode deliver them to the websockets of this process.
"""
from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from . import notify
from .reaper import reap_once

log = logging.getLogger(__name__)


async def reaper_loop(interval: float) -> None:
    def one_pass():
        close_old_connections()            # its thread keeps a connection (CONN_MAX_AGE)
        try:
            return reap_once()
        finally:
            close_old_connections()

    run = sync_to_async(one_pass, thread_sensitive=False)
    while True:
        try:
            await run()
        except asyncio.CancelledError:
            raise
        except Exception:                                        # noqa: BLE001
            log.exception("reaper pass failed")
        await asyncio.sleep(interval)


class with_background:                                         # noqa: N801 - used like a function
    def __init__(self, application):
        self.application = application
        self.task = None
        self.started = False

    def start(self) -> None:
        notify.start_sender()
        self.started = True
        interval = float(getattr(settings, "DOJO_REAPER_INTERVAL", 0) or 0)
        if self.task is None and interval > 0:
            self.task = asyncio.get_running_loop().create_task(reaper_loop(interval))

    async def __call__(self, scope, receive, send):
        if not self.started:
            self.start()
        return await self.application(scope, receive, send)

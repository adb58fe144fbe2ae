"""Sending to Channels groups from anywhere: ``send_soon(send, *args)`` runs a coroutine
function (a channel layer's ``group_send``, or one that sends to several groups) from
synchronous code (a view, a thread: it waits) or from code on a running event loop (a
consumer: it becomes a task there, so the loop is never blocked)."""
from __future__ import annotations

import asyncio

from asgiref.sync import async_to_sync


def send_soon(send, *args) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        loop.create_task(send(*args))
    else:
        async_to_sync(send)(*args)

"""Pushing job state changes to the Channels groups ``job-<id>`` and ``session-<id>``.

Message: ``{"type": "job.update", "job": job_dict(job)}``.  Works from a sync
view, a thread, or code running inside an event loop; never raises (a channel
layer that is down must not fail a state change, which is already committed).

In the web server, ``start_sender()`` (called on the server's event loop by
``webapp.runners.background``) starts one sender task there; from then on
``push`` only queues the message (thread-safe, in call order) and returns, so a
request never waits for the channel layer, and the messages of one job reach
the layer in the order of its state changes.  Elsewhere (management commands,
tests without a server loop) ``push`` sends at once and waits.
"""
from __future__ import annotations

import asyncio
import logging
import re
import threading

from channels.layers import get_channel_layer

from webapp.groups import send_soon

log = logging.getLogger(__name__)

GROUP_OK = re.compile(r"^[A-Za-z0-9\-_.]{1,99}$")

_sender: dict = {}          # {"loop": the server's loop, "queue": its asyncio.Queue}
_sender_lock = threading.Lock()


def groups_for(job: dict) -> list[str]:
    groups = [f"job-{job['id']}"]
    sid = job.get("session_id")
    if sid and GROUP_OK.match(f"session-{sid}"):
        groups.append(f"session-{sid}")
    return groups


def _layer():
    try:
        return get_channel_layer()
    except Exception:                                            # noqa: BLE001
        log.warning("no channel layer", exc_info=True)
        return None


async def _send_all(layer, groups, message):
    for group in groups:
        await layer.group_send(group, message)


async def _drain(queue: asyncio.Queue) -> None:
    while True:
        groups, message = await queue.get()
        layer = _layer()
        if layer is None:
            continue
        try:
            await _send_all(layer, groups, message)
        except Exception:                                        # noqa: BLE001
            log.warning("could not push job %s update", message["job"].get("id"), exc_info=True)


def start_sender() -> None:
    """Start the sender task on the running loop (once per loop); call from that loop."""
    loop = asyncio.get_running_loop()
    with _sender_lock:
        if _sender.get("loop") is loop:
            return
        queue = asyncio.Queue()
        _sender.update(loop=loop, queue=queue, task=loop.create_task(_drain(queue)))


def _queued(groups, message) -> bool:
    """Hand the message to the server loop's sender; False when there is none running."""
    loop, queue = _sender.get("loop"), _sender.get("queue")
    if loop is None or loop.is_closed() or not loop.is_running():
        return False
    try:
        if asyncio.get_running_loop() is loop:
            queue.put_nowait((groups, message))
            return True
    except RuntimeError:
        pass
    try:
        loop.call_soon_threadsafe(queue.put_nowait, (groups, message))
    except RuntimeError:                                         # closed meanwhile
        return False
    return True


def push(job: dict) -> None:
    message = {"type": "job.update", "job": job}
    groups = groups_for(job)
    if _queued(groups, message):
        return
    layer = _layer()
    if layer is None:
        return
    try:
        send_soon(_send_all, layer, groups, message)
    except Exception:                                            # noqa: BLE001
        log.warning("could not push job %s update", job.get("id"), exc_info=True)

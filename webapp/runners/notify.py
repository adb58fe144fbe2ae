"""Pushing job state changes to the Channels groups ``job-<id>`` and ``session-<id>``.

Message: ``{"type": "job.update", "job": job_dict(job)}``.  Works from a sync
view, a thread, or code running inside an event loop; never raises (a channel
layer that is down must not fail a state change, which is already committed).
"""
from __future__ import annotations

import asyncio
import logging
import re

log = logging.getLogger(__name__)

GROUP_OK = re.compile(r"^[A-Za-z0-9\-_.]{1,99}$")


def groups_for(job: dict) -> list[str]:
    groups = [f"job-{job['id']}"]
    sid = job.get("session_id")
    if sid and GROUP_OK.match(f"session-{sid}"):
        groups.append(f"session-{sid}")
    return groups


async def _send_all(layer, groups, message):
    for group in groups:
        await layer.group_send(group, message)


def push(job: dict) -> None:
    try:
        from channels.layers import get_channel_layer
        layer = get_channel_layer()
    except Exception:                                            # noqa: BLE001
        log.warning("no channel layer", exc_info=True)
        return
    if layer is None:
        return
    message = {"type": "job.update", "job": job}
    groups = groups_for(job)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    try:
        if loop is not None:               # called from async code: don't block the loop
            loop.create_task(_send_all(layer, groups, message))
        else:
            from asgiref.sync import async_to_sync
            async_to_sync(_send_all)(layer, groups, message)
    except Exception:                                            # noqa: BLE001
        log.warning("could not push job %s update", job.get("id"), exc_info=True)

"""Announcing new steps to the open pages of a history.

``announce_steps(session_id)`` sends ``{"type": "steps.update", "session": ID}`` to the
Channels group ``session-<ID>``; each page's consumer (consumers.py) answers with the
tree as it is in the database then.  It never raises: the steps are already committed.
``add_step`` calls it once its transaction commits.
"""
from __future__ import annotations

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)


def announce_steps(session_id: str) -> None:
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        message = {"type": "steps.update", "session": session_id}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            loop.create_task(layer.group_send(f"session-{session_id}", message))
        else:
            async_to_sync(layer.group_send)(f"session-{session_id}", message)
    except Exception:                                            # noqa: BLE001 - never fail the change
        log.warning("could not announce new steps of %s", session_id, exc_info=True)

"""Announcing new steps to the open pages of a history.

``announce_steps(session_id)`` sends ``{"type": "steps.update", "session": ID}`` to the
Channels group ``session-<ID>``; each page's consumer (consumers.py) answers with the
tree as it is in the database then.  It never raises: the steps are already committed.
``add_step`` calls it once its transaction commits.
"""
from __future__ import annotations

import logging

from channels.layers import get_channel_layer

from webapp.groups import send_soon

log = logging.getLogger(__name__)


def send_to_session(session_id: str, message: dict) -> None:
    """group_send ``message`` to the pages of a history (group ``session-<ID>``), from a
    running event loop (a consumer's) or from synchronous code.  May raise; callers guard."""
    layer = get_channel_layer()
    if layer is not None:
        send_soon(layer.group_send, f"session-{session_id}", message)


def announce_steps(session_id: str) -> None:
    try:
        send_to_session(session_id, {"type": "steps.update", "session": session_id})
    except Exception:                                            # noqa: BLE001 - never fail the change
        log.warning("could not announce new steps of %s", session_id, exc_info=True)

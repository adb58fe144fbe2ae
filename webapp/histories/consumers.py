"""The editor's websocket: ``/ws/s/ID/`` joins the Channels group ``session-<ID>`` and
turns each ``{"type": "job.update", "job": {...}}`` event (pushed by webapp.runners)
into htmx out-of-band swaps: the job's row, the step's badge in the history tree and
the results table and speedup plot."""
from __future__ import annotations

import logging
import re

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from webapp.agents.live import render_update

from .models import Session
from .views.bench import job_update_html

log = logging.getLogger(__name__)
SID = re.compile(r"^[A-Za-z0-9]{1,16}$")


class SessionConsumer(AsyncWebsocketConsumer):
    group = None

    async def connect(self):
        sid = self.scope["url_route"]["kwargs"].get("sid", "")
        if not SID.match(sid) or not await self._exists(sid):
            await self.close(code=4404)
            return
        self.sid = sid
        self.group = f"session-{sid}"
        if self.channel_layer is not None:
            await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if self.group and self.channel_layer is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None):
        pass                      # the page only listens

    async def job_update(self, event):
        job = event.get("job") or {}
        if not isinstance(job, dict):
            return
        try:
            html = await self._render(job)
        except Exception:                                     # noqa: BLE001 - keep the socket
            log.warning("cannot render job.update for %s", self.sid, exc_info=True)
            return
        await self.send(text_data=html)

    async def agent_update(self, event):
        """An agent run's progress (webapp/agents/live.py): the history tree and the run list."""
        try:
            html = await database_sync_to_async(render_update)(self.sid, event)
        except Exception:                                     # noqa: BLE001 - keep the socket
            log.warning("cannot render agent.update for %s", self.sid, exc_info=True)
            return
        if html:
            await self.send(text_data=html)

    @database_sync_to_async
    def _exists(self, sid):
        return Session.objects.filter(id=sid).exists()

    @database_sync_to_async
    def _render(self, job):
        session = Session.objects.get(id=self.sid)
        return job_update_html(session, job)

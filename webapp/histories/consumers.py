"""The editor's websocket: ``/ws/s/ID/?steps=N`` joins the Channels group ``session-<ID>``
and turns its events into htmx out-of-band swaps.

* ``job.update`` (a job dict, pushed by webapp.runners): the job's row, the step's badge,
  the results table and speedup plot; and the history tree with the header's step count
  whenever the session has steps the page's tree does not show yet, or the job finished
  (the best path may have moved).  The tree is rendered after the results, so a page
  never receives results for a step its tree does not have.
* ``steps.update`` (push.announce_steps: the owner added steps): the tree and the step
  count, when the session has steps the page's tree does not show yet.
* ``agent.update`` (webapp/agents/live.py): the tree and the agent runs' list.

``N`` (optional) is how many steps the page's tree showed when it was rendered; without
it the first event sends the tree.  The consumer raises it with every tree it sends.
Rendering errors are logged and the socket stays open.
"""
from __future__ import annotations

import logging
import re
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from webapp.agents.live import render_update

from .models import Session, Step
from .tree import tree_oob_html
from .views.bench import job_update_html

log = logging.getLogger(__name__)
SID = re.compile(r"^[A-Za-z0-9]{1,16}$")


def _known_steps(scope) -> int:
    raw = parse_qs((scope.get("query_string") or b"").decode("latin-1")).get("steps", [""])[0]
    return int(raw) if raw.isdigit() and len(raw) < 7 else 0


class SessionConsumer(AsyncWebsocketConsumer):
    group = None
    known = 0                 # how many steps the page's tree shows (at least)

    async def connect(self):
        sid = self.scope["url_route"]["kwargs"].get("sid", "")
        if not SID.match(sid) or not await self._exists(sid):
            await self.close(code=4404)
            return
        self.sid = sid
        self.known = _known_steps(self.scope)
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
        await self._send_rendered(self._render_job, job)

    async def steps_update(self, event):
        await self._send_rendered(self._render_steps)

    async def agent_update(self, event):
        await self._send_rendered(self._render_agent, event)

    async def _send_rendered(self, render, *args):
        try:
            html = await render(*args)
        except Exception:                                     # noqa: BLE001 - keep the socket
            log.warning("cannot render an update of %s", self.sid, exc_info=True)
            return
        if html:
            await self.send(text_data=html)

    @database_sync_to_async
    def _exists(self, sid):
        return Session.objects.filter(id=sid).exists()

    def _tree_if(self, session, always: bool) -> str:
        """The tree's swaps when ``always`` or the session has steps the page lacks."""
        count = Step.objects.filter(session=session).count()
        if not always and count <= self.known:
            return ""
        html = tree_oob_html(session)
        self.known = max(self.known, count)
        return html

    @database_sync_to_async
    def _render_job(self, job):
        session = Session.objects.get(id=self.sid)
        results = job_update_html(session, job)
        return self._tree_if(session, job.get("state") == "done") + results

    @database_sync_to_async
    def _render_steps(self):
        session = Session.objects.filter(id=self.sid).first()
        return self._tree_if(session, False) if session is not None else ""

    @database_sync_to_async
    def _render_agent(self, event):
        count = Step.objects.filter(session_id=self.sid).count()
        html = render_update(self.sid, event)
        if html:
            self.known = max(self.known, count)
        return html

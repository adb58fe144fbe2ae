"""The editor's websocket consumer (/ws/s/ID/): joins session-<ID>, renders job.update
events as htmx out-of-band swaps; refuses unknown sessions and foreign origins."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from webapp.histories import services

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = [(b"origin", b"http://127.0.0.1:8000")]


@pytest.fixture
def app(settings):
    settings.DOJO_REAPER_INTERVAL = 0          # no background reaper in these tests
    from webapp.asgi import application
    return application


def make_session():
    session, _ = services.create_session(services.Actor(), kernel="relu")
    return session.id


def test_job_update_reaches_the_socket_as_oob_swaps(app):
    sid = make_session()

    async def run():
        comm = WebsocketCommunicator(app, f"/ws/s/{sid}/", headers=ORIGIN)
        connected, _ = await comm.connect()
        assert connected
        job = {"id": 41, "state": "running", "session_id": sid, "step_index": 0, "runner": "r1", "result": None}
        await get_channel_layer().group_send(f"session-{sid}", {"type": "job.update", "job": job})
        html = await comm.receive_from(timeout=10)
        assert 'id="bench-results"' in html and 'hx-swap-oob="true"' in html
        assert 'id="job-41"' in html and 'data-state="running"' in html
        done = dict(job, state="done", result={"median_s": 0.002, "min_s": 0.0019, "max_s": 0.0021, "runner": "r1"})
        await get_channel_layer().group_send(f"session-{sid}", {"type": "job.update", "job": done})
        html = await comm.receive_from(timeout=10)
        assert 'data-state="done"' in html and "2.00 ms" in html
        assert '<span class="badge" id="t-0" hx-swap-oob="true">' in html
        # other sessions' events do not arrive here
        await get_channel_layer().group_send("session-other", {"type": "job.update", "job": job})
        assert await comm.receive_nothing(timeout=0.3)
        await comm.disconnect()

    async_to_sync(run)()


def test_unknown_session_and_foreign_origin_are_refused(app):
    sid = make_session()

    async def run():
        comm = WebsocketCommunicator(app, "/ws/s/zzzzzzzzzz/", headers=ORIGIN)
        connected, code = await comm.connect()
        assert not connected
        comm = WebsocketCommunicator(app, f"/ws/s/{sid}/", headers=[(b"origin", b"http://evil.example")])
        connected, _ = await comm.connect()
        assert not connected

    async_to_sync(run)()


def test_malformed_events_do_not_break_the_socket(app):
    sid = make_session()

    async def run():
        comm = WebsocketCommunicator(app, f"/ws/s/{sid}/", headers=ORIGIN)
        assert (await comm.connect())[0]
        await get_channel_layer().group_send(f"session-{sid}", {"type": "job.update", "job": "nonsense"})
        assert await comm.receive_nothing(timeout=0.3)
        await comm.send_to(text_data="hello")             # the page only listens
        job = {"id": 1, "state": "queued", "session_id": sid, "step_index": 0}
        await get_channel_layer().group_send(f"session-{sid}", {"type": "job.update", "job": job})
        assert 'id="job-1"' in await comm.receive_from(timeout=10)
        await comm.disconnect()

    async_to_sync(run)()

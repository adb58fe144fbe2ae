"""The web process's fast paths: HTTP through webapp.asgi (the sync middleware
chain on a fixed thread pool that keeps its database connections) and job-update pushes
queued to one sender on the server's loop, in order.

Real ASGI application, real views and database, the in-memory channel layer.
"""
from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import HttpCommunicator
from django.db import connections

from webapp.runners import notify

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def asgi(settings):
    settings.DOJO_REAPER_INTERVAL = 0
    from webapp.asgi import SyncChainASGIHandler, application
    handler = SyncChainASGIHandler(threads=1)      # one thread: the one to look at afterwards
    yield application, handler
    handler.pool.shutdown(wait=True)


async def call(app, method, path, body=b""):
    comm = HttpCommunicator(app, method, path, body=body,
                            headers=[(b"host", b"127.0.0.1"), (b"content-type", b"application/json")])
    answer = await comm.get_response(timeout=30)
    return answer["status"], json.loads(answer["body"] or b"{}")


def test_http_goes_through_the_sync_chain_and_keeps_db_connections(asgi):
    app, handler = asgi

    async def scenario():
        results = [await call(app, "GET", "/api/runners")]          # the whole application
        results += [await call(handler, "GET", "/api/runners") for _ in range(2)]
        results.append(await call(handler, "POST", "/api/jobs", b"{not json"))
        results.append(await call(handler, "GET", "/api/jobs/99999"))
        return results

    results = async_to_sync(scenario)()
    assert [r[0] for r in results] == [200, 200, 200, 400, 404]
    assert results[0][1] == {"runners": []}
    assert "bad JSON" in results[3][1]["error"] and results[4][1]["error"] == "no job 99999"
    # the pool's thread is not thrown away: it still holds the open connection it served
    # the requests with (CONN_MAX_AGE), for the next request
    assert handler.pool.submit(lambda: connections["default"].connection is not None).result()
    assert len(handler.pool._threads) == 1


def test_pushes_are_queued_to_the_servers_loop_and_arrive_in_order():
    layer = get_channel_layer()

    async def scenario():
        notify.start_sender()
        channel = await layer.new_channel()
        await layer.group_add("session-ordered", channel)
        states = ["queued", "running", "done"]

        def from_a_request_thread():
            for i, state in enumerate(states):
                notify.push({"id": 7, "state": state, "session_id": "ordered", "n": i})

        await asyncio.to_thread(from_a_request_thread)      # returns without waiting for the layer
        got = [(await asyncio.wait_for(layer.receive(channel), 5))["job"]["state"] for _ in states]
        return got

    assert async_to_sync(scenario)() == ["queued", "running", "done"]

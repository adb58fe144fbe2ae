"""Concurrent steps on one session: every request gets its step (no 409), indices stay
unique. Not collected by the main run (its name): tests/runners/test_runners_postgres.py runs it on
PostgreSQL, in a child pytest with DATABASE_URL. SQLite serializes writers itself (and the
in-memory test database answers "table is locked" to concurrent connections at once)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from webapp.histories import services
from webapp.histories.models import Step

pytestmark = pytest.mark.django_db(transaction=True)

ACTIONS = [f"split i by {f}" for f in (2, 4, 8, 16, 32)] + \
          [f"split j by {f}" for f in (2, 4, 8, 16, 32)]


def test_ten_concurrent_steps_on_one_session_all_land():
    assert connection.vendor == "postgresql", "run by tests/runners/test_runners_postgres.py"
    actor = services.Actor(token="")
    session, token = services.create_session(actor, kernel="matmul", sizes={"N": 64, "M": 64, "K": 64})
    owner = services.Actor(token=token)
    errors, barrier = [], threading.Barrier(len(ACTIONS))

    def post(action):
        from django.db import connections
        try:
            barrier.wait()
            services.add_step(session, owner, 0, action)
        except Exception as exc:                                        # noqa: BLE001
            errors.append(f"{action}: {exc}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post, args=(a,)) for a in ACTIONS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    indices = sorted(Step.objects.filter(session=session).values_list("index", flat=True))
    assert indices == list(range(len(ACTIONS) + 1))

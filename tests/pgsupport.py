"""The local PostgreSQL server for tests: reachability and throwaway databases.

``.ci/run`` starts PostgreSQL on 127.0.0.1:5432 (trust authentication, user postgres);
DOJO_TEST_PG names another server as a libpq connection string without ``dbname``.
"""
from __future__ import annotations

import os
import uuid

PG = os.environ.get("DOJO_TEST_PG", "host=127.0.0.1 port=5432 user=postgres")
SKIP_REASON = (f"no PostgreSQL server is reachable with {PG!r} (.ci/run starts one; "
               "DOJO_TEST_PG names another)")


def _params() -> dict:
    return dict(part.split("=", 1) for part in PG.split())


def _connect():
    import psycopg
    return psycopg.connect(PG + " dbname=postgres", autocommit=True, connect_timeout=2)


def reachable() -> bool:
    try:
        with _connect():
            return True
    except Exception:                                                  # noqa: BLE001
        return False


def url(name: str) -> str:
    p = _params()
    user = p.get("user", "postgres")
    return f"postgres://{user}@{p.get('host', '127.0.0.1')}:{p.get('port', '5432')}/{name}"


def new_database(prefix: str = "perfdojo_t_"):
    """(DATABASE_URL, drop) for a fresh, empty database; drop() removes it."""
    conn = _connect()
    name = prefix + uuid.uuid4().hex[:10]
    conn.execute(f'CREATE DATABASE "{name}"')

    def drop():
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'DROP DATABASE IF EXISTS "test_{name}" WITH (FORCE)')
        finally:
            conn.close()
    return url(name), drop

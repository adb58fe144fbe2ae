"""The runner registry, protocol, tickets and reaper tests again, on PostgreSQL.

SQLite ignores ``SELECT ... FOR UPDATE``; PostgreSQL refuses it on the nullable side of
an outer join, so row locks that work on one can fail on the other.  This module runs
tests/runners/test_runners.py, tests/runners/test_runners_tickets.py and tests/runners/test_runners_http.py in a
child pytest with DATABASE_URL naming a fresh PostgreSQL database (pytest-django makes
its ``test_`` copy there).  Skipped only when no PostgreSQL server is reachable.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pgsupport

ROOT = Path(__file__).resolve().parents[2]
FILES = ["tests/runners/test_runners.py", "tests/runners/test_runners_tickets.py", "tests/runners/test_runners_http.py",
         "tests/runners/test_security_jobs.py", "tests/runners/pg_concurrent_steps.py"]

pytestmark = pytest.mark.skipif(not pgsupport.reachable(), reason=pgsupport.SKIP_REASON)


def test_runner_tests_pass_on_postgresql(tmp_path):
    db_url, drop = pgsupport.new_database()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(DATABASE_URL=db_url, DOJO_STATE_DIR=str(tmp_path / "state"))
    try:
        files = [f for f in FILES if (ROOT / f).exists()]
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "-p", "no:xdist", "-W", "ignore::pytest.PytestWarning", *files],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        drop()
    tail = (out.stdout + out.stderr)[-6000:]
    assert out.returncode == 0, tail
    assert " passed" in tail, tail

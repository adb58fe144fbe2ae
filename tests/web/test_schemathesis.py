"""schemathesis against the real server (python -m webapp.launch, as `make run` starts it):
every operation of /api/openapi.json, anonymous and with an owner token, every check but
the two about input strictness: ``positive_data_acceptance`` (schema-valid input such as
an unknown kernel name is refused with a 4xx by design) and ``negative_data_rejection``
(the API tolerates some input the schema leaves out, e.g. ``?step=`` for the current
step).  Server errors, status codes, content types, response bodies and headers,
unsupported methods and auth are all checked.  Bounded: 25 examples per operation and phase, a few
minutes at most.  Passes only with 0 server errors and 0 schema violations.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from live_server import Server

ST = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or shutil.which("schemathesis")

pytestmark = pytest.mark.skipif(ST is None, reason="schemathesis is not installed (pip install -e '.[test]')")


@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path, who):
    s = Server(tmp_path, local_runner=False, env={"DOJO_RATE_WRITES_PER_MIN": "1000000"})
    try:
        cmd = [ST, "run", s.url + "/api/openapi.json", "--url", s.url, "-n", "25",
               "--checks", "all", "--exclude-checks", "positive_data_acceptance,negative_data_rejection",
               "--request-timeout", "20", "--max-response-time", "10", "--generation-database", ":memory:"]
        if who == "owner":
            cmd += ["-H", f"Authorization: Token {s.api_token}"]
        out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=420,
                             env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false", "NO_COLOR": "1"})
    finally:
        s.stop()
    report = out.stdout[-8000:] + out.stderr[-2000:]
    assert out.returncode == 0, report
    assert " passed" in report and "failure" not in report.split("SUMMARY")[-1], report

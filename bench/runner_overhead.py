"""Dispatch overhead of the runner system (issue 5): API request -> stored result.

    .venv/bin/python bench/runner_overhead.py [--broker embedded|redis|both] [--jobs 50]

For each broker it starts a real server (``python -m webapp.launch`` with its local runner,
in a temporary state directory) and a second runner, then

* latency: ``--jobs`` trivial jobs one after another (``options.dry_run``: the runner
  claims the job and reports at once, no compile, no sandbox), each from the client's
  clock just before the POST to the server's ``finished`` timestamp of the stored result
  (same host, same clock; the client polls GET /api/jobs/ID every 20 ms only to know when
  to go on), and the server's own ``created -> finished`` span; median and p90 in ms;
* throughput: ``4 x --jobs`` trivial jobs submitted at once to any runner (two runners),
  jobs per second until all are done.

Prints one JSON object. Redis: REDIS_URL (default redis://127.0.0.1:6379/0).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_jobs_integration import Server  # noqa: E402  (the integration tests' launcher)

KERNEL = "kernel tiny(N = 4)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i]\n"


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def one_mode(mode: str, n: int) -> dict:
    env = {"DOJO_RUNNER_HEARTBEAT": "1", "DOJO_RUNNER_OFFLINE_AFTER": "10",
           "DOJO_REAPER_INTERVAL": "1"}
    if mode == "redis":
        env["REDIS_URL"] = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    with tempfile.TemporaryDirectory(prefix=f"dojo-bench-{mode}-") as tmp:
        s = Server(Path(tmp), env=env)
        try:
            s.env.update(env)
            s.start_runner("second", "bench", s.token())
            s.wait_online("local", "second")
            wall, server = [], []
            for i in range(n + 1):
                t0 = time.time()
                job_id = s.submit(source=KERNEL, runner="local", options={"dry_run": True})
                while True:
                    time.sleep(0.02)
                    job = s.job(job_id)
                    if job["final"]:
                        break
                if i == 0:
                    continue                                   # warm-up
                created, finished = (datetime.fromisoformat(job[k]) for k in ("created", "finished"))
                wall.append((finished.timestamp() - t0) * 1e3)
                server.append((finished - created).total_seconds() * 1e3)
            m = 4 * n
            t0 = time.perf_counter()
            ids = [s.submit(source=KERNEL, options={"dry_run": True}) for _ in range(m)]
            submitted = time.perf_counter() - t0
            pending = set(ids)
            while pending:
                pending = {i for i in pending if not s.job(i)["final"]}
                time.sleep(0.01)
            total = time.perf_counter() - t0
            by_runner = {}
            for i in ids:
                by_runner[s.job(i)["runner"]] = by_runner.get(s.job(i)["runner"], 0) + 1
            return {"broker": mode, "jobs": n,
                    "latency_ms": {"median": round(statistics.median(wall), 1), "p90": round(pct(wall, 0.9), 1)},
                    "server_created_to_finished_ms": {"median": round(statistics.median(server), 1),
                                                      "p90": round(pct(server, 0.9), 1)},
                    "throughput": {"jobs": m, "seconds": round(total, 2), "jobs_per_s": round(m / total, 1),
                                   "submit_s": round(submitted, 2), "by_runner": by_runner}}
        finally:
            s.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--broker", choices=("embedded", "redis", "both"), default="both")
    p.add_argument("--jobs", type=int, default=50)
    args = p.parse_args()
    modes = ["embedded", "redis"] if args.broker == "both" else [args.broker]
    print(json.dumps([one_mode(m, args.jobs) for m in modes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Dispatch overhead of the runner system (issue 5): API request -> stored result.

    .venv/bin/python bench/runner_overhead.py [--broker embedded|redis|both] [--jobs 50]

For each broker it starts a real server (``python -m webapp.launch`` with its local runner,
in a temporary state directory) and a second runner, then

* latency: ``--jobs`` trivial jobs one after another (``options.dry_run``: the runner
  claims the job and reports at once, no compile, no sandbox), each from the client's
  clock just before the POST to the server's ``finished`` timestamp of the stored result
  (same host, same clock; the client polls GET /api/jobs/ID every 20 ms only to know when
  to go on), and the server's own ``created -> finished`` span; median and p90 in ms;
* phases: the median of each step of that path (``PHASES`` below: request -> submit
  called -> message published -> received by the runner -> result sent -> stored), and
  how many results carried their job's claim (a job that ends within the runner's
  ``--claim-after``, as these do) rather than a claim made before;
* CPU: milliseconds of CPU per latency job used by the server's process tree (launcher,
  daphne and the local runner that runs these jobs, its worker included) and, for
  comparison, by the idle second runner (heartbeats only): the machine's load stretches
  the latency, not this;
* throughput: ``4 x --jobs`` trivial jobs submitted at once to any runner (two runners),
  jobs per second until all are done.

Prints one JSON object (with the load average before and after). Redis: REDIS_URL (default redis://127.0.0.1:6379/0).
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
from live_server import Server  # noqa: E402  (the integration tests' launcher)

KERNEL = "kernel tiny(N = 4)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i]\n"


# (name, from, to): marks are the client's clock (request: just before the POST; answered:
# its 201 in hand), the server's (created: submit called; finished: the result stored) and
# the runner's ``result.timing`` (published: the message sent, by the server's clock;
# received: the task started on the runner; sent: the result posted; claimed: the claim
# answered, absent when the result carried the claim).  One host, one clock.  The first
# five phases add up to the latency; "answered" overlaps them.
PHASES = [("request_to_created", "request", "created"),
          ("created_to_published", "created", "published"),
          ("published_to_received", "published", "received"),
          ("received_to_sent", "received", "sent"),
          ("sent_to_stored", "sent", "finished"),
          ("request_to_answered", "request", "answered"),
          ("received_to_claimed", "received", "claimed")]


def process_tree_cpu_s(root_pid: int) -> float:
    """User + system CPU seconds used so far by a process and its descendants (Linux /proc)."""
    children, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [root_pid]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return total


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def one_mode(mode: str, n: int) -> dict:
    env = {"DOJO_RUNNER_HEARTBEAT": "1", "DOJO_RUNNER_OFFLINE_AFTER": "10",
           "DOJO_REAPER_INTERVAL": "1"}
    if mode == "redis":
        env["REDIS_URL"] = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix=f"dojo-bench-{mode}-") as tmp:
        s = Server(Path(tmp), env=env)
        try:
            s.env.update(env)
            s.start_runner("second", "bench", s.token())
            s.wait_online("local", "second")
            wall, server, phases = [], [], {name: [] for name, _, _ in PHASES}
            claims_with_result = 0
            for i in range(n + 1):
                if i == 1:
                    cpu0 = {"server": process_tree_cpu_s(s.proc.pid),
                            "second_runner": process_tree_cpu_s(s.runners["second"].pid)}
                t0 = time.time()
                job_id = s.submit(source=KERNEL, runner="local", options={"dry_run": True})
                answered = time.time()
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
                marks = {"request": t0, "answered": answered, "created": created.timestamp(),
                         "finished": finished.timestamp(), **(job["result"].get("timing") or {})}
                for name, start, end in PHASES:
                    if marks.get(start) is not None and marks.get(end) is not None:
                        phases[name].append((marks[end] - marks[start]) * 1e3)
                claims_with_result += marks.get("claimed") is None
            cpu = {k: round((process_tree_cpu_s(pid) - cpu0[k]) * 1e3 / n, 1) for k, pid in
                   (("server", s.proc.pid), ("second_runner", s.runners["second"].pid))}
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
                    "load_average_1_5_15": {"before": load_before,
                                            "after": [round(x, 2) for x in os.getloadavg()]},
                    "latency_ms": {"median": round(statistics.median(wall), 1), "p90": round(pct(wall, 0.9), 1)},
                    "server_created_to_finished_ms": {"median": round(statistics.median(server), 1),
                                                      "p90": round(pct(server, 0.9), 1)},
                    "phase_median_ms": {name: round(statistics.median(v), 1) if v else None
                                        for name, v in phases.items()},
                    "claims_with_the_result": claims_with_result,
                    "cpu_ms_per_job": cpu,
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

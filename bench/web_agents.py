"""What running an agent through the web costs: a random-agent run started over the API
(server + local runner + agents worker, embedded broker, a fresh state directory) against
the same agent, seed and budget with the LocalEvaluator in this process.

    .venv/bin/python bench/web_agents.py [--kernel matmul] [--size N=64 ...] [--budget 12]

Prints one JSON object: wall seconds and seconds per measurement both ways, the web run's
overhead per measurement and where its time goes (per job: waiting for the runner, running
on it, and the agent side between jobs), and the best speedups found.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from webapp.launched import free_port, wait_until  # noqa: E402


def call(url, method="GET", data=None, token=None):
    headers = {"Content-Type": "application/json", **({"Authorization": f"Token {token}"} if token else {})}
    req = urllib.request.Request(url, data=None if data is None else json.dumps(data).encode(), method=method,
                                 headers=headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def wait(cond, timeout, what):
    try:
        wait_until(cond, timeout, what, interval=0.2)
    except AssertionError as exc:
        raise SystemExit(str(exc).strip()) from None


def web_run(kernel, sizes, budget, seed, min_time):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="perfdojo-bench-agents-"))
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update({"DOJO_STATE_DIR": str(tmp / "state"), "DOJO_CACHE_DIR": str(tmp / "cache"), "DJANGO_DEBUG": "0"})
    proc = subprocess.Popen([sys.executable, "-m", "webapp.launch", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait(lambda: any(r["online"] for r in call(url + "/api/runners")["runners"]), 90, "the local runner")
        session = call(url + "/api/sessions", "POST", {"kernel": kernel, "sizes": sizes})
        start = time.monotonic()
        run = call(f"{url}/api/sessions/{session['id']}/agents", "POST", {
            "agent": "random", "budget": budget, "seed": seed, "runner": "local",
            "options": {"min_time": min_time, "threads": 1}}, session["owner_token"])
        wait(lambda: call(f"{url}/api/agents/{run['run']}")["final"], 60 * budget, "the run")
        wall = time.monotonic() - start
        jobs = [j for st in call(f"{url}/api/sessions/{session['id']}")["steps"] for j in st["results"]]
        return call(f"{url}/api/agents/{run['run']}"), wall, breakdown(jobs)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def breakdown(jobs) -> dict:
    """Mean seconds a job waited for its runner (created -> started), ran (started ->
    finished), and the agent side between one job's end and the next job's creation."""
    from datetime import datetime
    t = lambda s: datetime.fromisoformat(s).timestamp() if s else None             # noqa: E731
    jobs = sorted(jobs, key=lambda j: j["id"])
    waits = [t(j["started"]) - t(j["created"]) for j in jobs if j["started"]]
    runs = [t(j["finished"]) - t(j["started"]) for j in jobs if j["started"] and j["finished"]]
    gaps = [t(b["created"]) - t(a["finished"]) for a, b in zip(jobs, jobs[1:]) if a["finished"]]
    mean = lambda xs: round(sum(xs) / len(xs), 3) if xs else None                   # noqa: E731
    return {"queue_wait_s": mean(waits), "job_run_s": mean(runs), "agent_gap_s": mean(gaps)}


def local_run(kernel, sizes, budget, seed, min_time):
    from dojo_core import kernels
    from dojo_core.agents import make_agent
    from dojo_core.agents.evaluators import LocalEvaluator
    from dojo_core.records import RecordStore
    root = kernels.load_kernel(kernel, sizes)
    evaluator = LocalEvaluator(min_time=min_time, threads=1,
                               store=RecordStore(Path(tempfile.mkdtemp()) / "m.jsonl"))
    start = time.monotonic()
    try:
        result = make_agent("random").search(root, evaluator, budget, seed=seed)
    finally:
        evaluator.close()
    return result, time.monotonic() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", default="matmul")
    p.add_argument("--size", action="append", default=[], metavar="N=V")
    p.add_argument("--budget", type=int, default=12)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-time", type=float, default=0.05)
    args = p.parse_args()
    sizes = {k: int(v) for k, _, v in (s.partition("=") for s in args.size)} or {"N": 64, "M": 64, "K": 64}
    os.environ.setdefault("DOJO_CACHE_DIR", tempfile.mkdtemp(prefix="perfdojo-bench-cache-"))
    run, web_wall, parts = web_run(args.kernel, sizes, args.budget, args.seed, args.min_time)
    result, local_wall = local_run(args.kernel, sizes, args.budget, args.seed, args.min_time)
    n_web, n_local = run["measured"], len(result.trials)
    print(json.dumps({
        "kernel": args.kernel, "sizes": sizes, "budget": args.budget, "min_time": args.min_time,
        "web": {"measurements": n_web, "wall_s": round(web_wall, 2), "s_per_measurement": round(web_wall / n_web, 3),
                "speedup": round(run["best"]["speedup"], 3) if run["best"] and run["best"]["speedup"] else None,
                "state": run["state"], "per_job_mean": parts},
        "local": {"measurements": n_local, "wall_s": round(local_wall, 2),
                  "s_per_measurement": round(local_wall / n_local, 3), "speedup": round(result.speedup, 3)},
        "web_overhead_s_per_measurement": round(web_wall / n_web - local_wall / n_local, 3),
    }, indent=1))


if __name__ == "__main__":
    main()

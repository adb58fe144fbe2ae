"""A real PerfDojo server for end-to-end tests: ``python -m webapp.launch`` on a free port with
its own state directory, its runner daemons, and a small JSON HTTP client."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from webapp.launched import free_port, request, wait_until  # noqa: F401  (free_port: re-exported)

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"N": 32, "M": 32, "K": 32}
# for jobs that must outlast their min_time: one run of the untransformed kernel takes
# milliseconds, so the harness's repetition cap never cuts the measurement short
LONG = {"N": 256, "M": 256, "K": 256}
FAST = {"min_time": 0.05, "threads": 1, "timeout_s": 60}
REDIS_URL = os.environ.get("DOJO_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def http(method, url, data=None, timeout=10, token=None):
    """(status, the JSON answer) of a request; an HTTP error status is an answer too."""
    status, body = request(method, url, data, timeout=timeout, token=token)
    return status, json.loads(body or b"{}")


class Server:
    """``python -m webapp.launch`` on a free port with its own state directory."""

    def __init__(self, tmp: Path, local_runner=True, env=None):
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
        self.env.update({
            "DOJO_STATE_DIR": str(tmp / "state"), "PYTHONPATH": str(ROOT),
            "DOJO_RUNNER_HEARTBEAT": "0.4", "DOJO_RUNNER_OFFLINE_AFTER": "3",
            "DOJO_REAPER_INTERVAL": "0.3", "DOJO_REDISPATCH_AFTER": "5",
            "DOJO_RUNNER_LOG": "WARNING", "DOJO_CACHE_DIR": str(tmp / "cache"),
            "DJANGO_DEBUG": "0",
        })
        self.env.update(env or {})
        self.log = open(tmp / "server.log", "wb")
        cmd = [sys.executable, "-m", "webapp.launch", "--port", str(self.port)]
        if not local_runner:
            cmd.append("--no-runner")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.runners: dict[str, subprocess.Popen] = {}
        self.wait(lambda: self.get("/api/runners")[0] == 200, 90, "the server to start")
        # jobs need a submitter: the owner token of a session made for it; the library
        # client (dojo_core.library.client) of this test process sends it too
        status, made = http("POST", self.url + "/api/sessions", {"kernel": "relu"})
        assert status == 201, made
        self.api_token = made["owner_token"]
        self._saved_token = os.environ.get("DOJO_API_TOKEN")
        os.environ["DOJO_API_TOKEN"] = self.api_token

    def logs(self) -> str:
        texts = [(self.tmp / "server.log").read_text(errors="replace")[-4000:]]
        for name in self.runners:
            texts.append((self.tmp / f"runner-{name}.log").read_text(errors="replace")[-3000:])
        return "\n-----\n".join(texts)

    def wait(self, cond, timeout, what):
        wait_until(cond, timeout, what, self.proc, self.logs)

    def get(self, path):
        return http("GET", self.url + path)

    def post(self, path, data, token=True):
        return http("POST", self.url + path, data, token=self.api_token if token is True else token)

    def token(self, uses=1) -> str:
        out = subprocess.run([sys.executable, "manage.py", "make_runner_token", "--uses", str(uses)],
                             cwd=ROOT, env=self.env, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def start_runner(self, name, labels, token, grace=5):
        log = open(self.tmp / f"runner-{name}.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "runners", "--server", self.url, "--token", token, "--name", name,
             "--labels", labels, "--state-dir", str(self.tmp / f"runner-{name}"), "--grace", str(grace),
             "--log-level", "INFO"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.runners[name] = proc
        return proc

    def runner(self, name):
        for r in self.get("/api/runners")[1]["runners"]:
            if r["name"] == name:
                return r
        return None

    def wait_online(self, *names, timeout=60):
        self.wait(lambda: all((self.runner(n) or {}).get("online") for n in names), timeout,
                  f"runners {names} online")

    def job(self, job_id):
        status, data = self.get(f"/api/jobs/{job_id}")
        assert status == 200, data
        return data

    def wait_job(self, job_id, states, timeout=60):
        self.wait(lambda: self.job(job_id)["state"] in states, timeout, f"job {job_id} in {states}")
        return self.job(job_id)

    def submit(self, token=True, **data):
        status, answer = self.post("/api/jobs", data, token=token)
        assert status == 201, answer
        return answer["job"]

    def history(self, kernel, sizes, steps=()) -> tuple[str, str]:
        """(session id, owner token) of a new history of ``kernel`` with ``steps`` applied."""
        status, made = self.post("/api/sessions", {"kernel": kernel, "sizes": sizes}, token=None)
        assert status == 201, made
        for step in steps:
            status, answer = self.post(f"/api/sessions/{made['id']}/steps", {"action": step},
                                       token=made["owner_token"])
            assert status == 201, answer
        return made["id"], made["owner_token"]

    def stop(self):
        if self._saved_token is None:
            os.environ.pop("DOJO_API_TOKEN", None)
        else:
            os.environ["DOJO_API_TOKEN"] = self._saved_token
        for proc in self.runners.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.runners.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        for pgid in [self.proc.pid] + [p.pid for p in self.runners.values()]:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.log.close()


def redis_reachable() -> bool:
    """Whether a Redis server answers at REDIS_URL."""
    try:
        import redis
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except Exception:                                                  # noqa: BLE001
        return False

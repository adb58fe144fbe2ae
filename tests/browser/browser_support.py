"""The browser tests' shared parts: Debian's chromium driven by Playwright against the real
ASGI server (``python -m webapp.launch``: daphne with its real local runner), and screenshots
kept under ``var/test-artifacts/browser/`` (not committed; DOJO_TEST_ARTIFACTS moves them).

Chromium is /usr/bin/chromium (Debian; ``.ci/run`` installs it); without it the browser tests
skip with that reason, except under CI=true where they fail."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from live_server import free_port, http  # noqa: F401  (re-exported to the browser tests)
from webapp.launched import wait_until

try:
    from playwright.sync_api import expect, sync_playwright  # noqa: F401  (re-exported)
except ImportError:                                     # pragma: no cover
    sync_playwright = None

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("DOJO_TEST_ARTIFACTS", ROOT / "var" / "test-artifacts")) / "browser"
CHROMIUM = os.environ.get("DOJO_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
SMALL = {"N": 48, "M": 48, "K": 48}
# true once the page's htmx websocket (the editor's live updates) is open
WS_OPEN = ("() => { const el = document.querySelector('[ws-connect]'); const d = el && el['htmx-internal-data'];"
           " return !!(d && d.webSocket && d.webSocket.socket.readyState === 1); }")

def _missing() -> str | None:
    if sync_playwright is None:
        return "playwright is not installed"
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"no chromium at {CHROMIUM} (apt-get install -y chromium)"
    return None


class Server:
    """``python -m webapp.launch`` (daphne + the local runner) on a free port, own state dir."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
        env.update({"DOJO_STATE_DIR": str(tmp / "state"), "PYTHONPATH": str(ROOT), "DOJO_TEST_HOOKS": "1",
                    "DOJO_CACHE_DIR": str(tmp / "cache"), "DJANGO_DEBUG": "0",
                    "DOJO_RUNNER_HEARTBEAT": "0.5", "DOJO_RUNNER_OFFLINE_AFTER": "5",
                    "DOJO_REAPER_INTERVAL": "0.5", "DOJO_RUNNER_LOG": "WARNING"})
        self.log_path = tmp / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "webapp.launch", "--port", str(self.port)],
                                     cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.wait(lambda: http("GET", self.url + "/api/runners")[0] == 200, 60, "the server")

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def wait(self, cond, timeout, what):
        wait_until(cond, timeout, what, self.proc, self.logs)

    def runner_online(self, name="local") -> bool:
        _, body = http("GET", self.url + "/api/runners")
        return any(r["name"] == name and r["online"] for r in body.get("runners", []))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)          # launch stops the runner, then daphne
            try:
                self.proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def served(tmp: Path, runner_online: bool = False):
    """A module fixture's body: a Server in ``tmp`` (once its local runner is online, with
    ``runner_online``), stopped after the module's tests."""
    require_browser()
    s = Server(tmp)
    if runner_online:
        s.wait(s.runner_online, 60, "the local runner")
    yield s
    s.stop()


def watched_page(context, errors: list | None = None):
    """(a new page of ``context``, the list its uncaught script errors are appended to)."""
    errors = [] if errors is None else errors
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors


def new_matmul(page, server, size=8) -> str:
    """The session id of a new matmul history made on the gallery at ``size`` for N, M, K."""
    page.goto(server.url + "/")
    card = page.locator("#kernel-matmul")
    card.locator("details.at-sizes summary").click()
    for name in ("N", "M", "K"):
        card.locator(f"input[name=size_{name}]").fill(str(size))
    card.locator("button[data-kernel=matmul]").click()
    page.wait_for_url("**/s/*/")
    return session_id(page)


def shot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def session_id(page) -> str:
    """The session id of an editor page's URL (/s/ID/...)."""
    return page.url.split("/s/")[1].split("/")[0]


def require_browser() -> None:
    """Skip (fail under CI=true) when Playwright or chromium is missing, with the reason."""
    reason = _missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser tests cannot run under CI: {reason}")
        pytest.skip(reason)

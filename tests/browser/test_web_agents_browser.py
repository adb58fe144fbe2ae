"""Browser test of agent runs: Playwright driving Debian's chromium
headless against the real server (``python -m webapp.launch``: daphne, the local runner
and the agents worker it starts), as tests/browser/test_browser_editor.py does.

Start a random agent from the editor's agent panel, see its steps arrive in the history
tree and its progress in the run list live (no reload), stop it with the Stop button,
and find the run stopped with fewer measurements than its budget.  A screenshot goes to
``var/test-artifacts/browser/agent-run.png``.
"""
from __future__ import annotations

import pytest

from browser_support import ARGS, CHROMIUM, WS_OPEN, http, served, shot, sync_playwright, watched_page

from playwright.sync_api import expect

pytestmark = [pytest.mark.xdist_group("browser_agents")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from served(tmp_path_factory.mktemp("browser-agents"), runner_online=True)


def test_agent_started_in_the_editor_streams_steps_live_and_stops(server):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 1100})
        context.set_default_timeout(20000)
        page, errors = watched_page(context)
        page.goto(server.url + "/")
        card = page.locator("#kernel-matmul")
        card.locator("details.at-sizes summary").click()
        for name in ("N", "M", "K"):
            card.locator(f"input[name=size_{name}]").fill("8")
        card.locator("button[data-kernel=matmul]").click()
        page.wait_for_url("**/s/*/")
        sid = page.url.split("/s/")[1].split("/")[0]
        page.wait_for_function(WS_OPEN)
        page.evaluate("window.__noReload = 1")
        expect(page.locator("#tree li.step")).to_have_count(1)

        page.select_option("#agent-name", "random")
        page.fill("#agent-budget", "40")
        page.select_option("#agent-form select[name=runner]", "local")
        page.click("#agent-start")
        run = page.locator("#agent-runs li").first
        expect(run).to_contain_text("random")
        expect(run).to_have_attribute("data-state", "running", timeout=30000)

        # steps arrive in the tree and measurements in the run list, pushed over the websocket
        expect(page.locator("#tree-2")).to_be_visible(timeout=90000)
        page.wait_for_function("() => +document.querySelector('#agent-runs li').dataset.measured >= 2",
                               timeout=90000)
        expect(page.locator("#jobs li[data-state=done]").first).to_be_visible()
        shot(page, "agent-run")

        page.click("#agent-runs .agent-stop")
        expect(page.locator("#agent-runs li").first).to_have_attribute("data-state", "stopped", timeout=90000)
        assert page.evaluate("window.__noReload") == 1                 # everything arrived live
        assert page.locator("#agent-runs .agent-stop").count() == 0

        run_id = int(run.get_attribute("id").split("-")[-1])
        status, body = http("GET", f"{server.url}/api/agents/{run_id}")
        assert status == 200 and body["state"] == "stopped" and body["stop_requested"]
        assert 2 <= body["measured"] < 40
        _, history = http("GET", f"{server.url}/api/sessions/{sid}")
        expect(page.locator("#tree li.step")).to_have_count(len(history["steps"]))
        assert int(run.get_attribute("data-measured")) == body["measured"]
        assert not errors, errors
        context.close()
        browser.close()

"""Browser tests: Playwright driving Debian's chromium headless against the real
ASGI server (``python -m webapp.launch``: daphne) with its real local runner.

Flows: open the gallery, start a session from matmul, click a loop, apply
``split i by 32``, see the diff (IR and C), undo, open the shared URL in a fresh
(anonymous) browser context, see the same history read-only, fork it, extend the fork;
a ``job.update`` pushed inside the server process reaches the page over the websocket
without a reload; a real benchmark on the local runner arrives live with its speedup.

Screenshots of the editor, the diff view and the benchmark plot are saved under
``var/test-artifacts/browser/`` (not committed).  Chromium is /usr/bin/chromium (Debian;
``.ci/run`` installs it); without it these tests skip, except under CI=true where they fail.
"""
from __future__ import annotations

import pytest

from browser_support import SMALL, http, session_id, shot, watched_page
from playwright.sync_api import expect

# one server per module when run together (`--dist loadgroup`/`loadfile`); under plain
# `-n`, xdist may split the tests and each worker then starts its own server
pytestmark = [pytest.mark.xdist_group("browser")]


def test_gallery_new_session_click_loop_apply_diff_undo_share_fork(server, context, browser):
    page, errors = watched_page(context)

    # the gallery: library kernels with a "new session" button each
    page.goto(server.url + "/")
    expect(page.locator("#kernel-matmul")).to_contain_text("N=512, M=512, K=512")
    page.click("#kernel-matmul button")
    page.wait_for_url("**/s/*/")
    sid = session_id(page)
    expect(page.locator("#editor")).to_have_attribute("data-step", "0")
    expect(page.locator("#ir .line").nth(6)).to_contain_text("for i in 0..N:")

    # click the loop header of i: the legal actions there, grouped by kind
    page.click("#ir .line[data-ref=i]")
    expect(page.locator("#actions")).to_have_attribute("data-at", "i")
    expect(page.locator("#actions .group h3").first).to_contain_text("split")
    expect(page.locator("#actions .not-legal")).to_be_visible()
    expect(page.locator("#ir .line[data-ref=i]")).to_have_class("line clickable loop selected")

    # apply `split i by 32`: the step is appended and the IR diff shows it
    page.click("button.action-item[data-action='split i by 32']")
    expect(page.locator("#editor")).to_have_attribute("data-step", "1")
    assert page.url.endswith(f"/s/{sid}/?step=1")
    expect(page.locator("#tree-1")).to_contain_text("split i by 32")
    expect(page.locator("#tree-1")).to_have_class("step current viewed on-path")
    expect(page.locator("#diff h2")).to_have_text("Step 0 → step 1")
    expect(page.locator("#diff table.diff tr.change").first).to_contain_text("for i0 in 0..N // 32:")
    # the legal actions of the new step arrive right after (a deferred panel)
    expect(page.locator("#actions button.action-item[data-action='split i1 by 4']")).to_be_visible()
    shot(page, "editor")

    # the generated C changes too
    page.click("#diff a.tab[data-code=c]")
    expect(page.locator("#diff table[data-code=c]")).to_be_visible()
    expect(page.locator("#diff table[data-code=c]")).to_contain_text("i0")
    shot(page, "diff-c")
    page.click("#mode-unified")
    expect(page.locator("#diff table.unified")).to_be_visible()

    # an illegal free-text action shows why
    page.fill("#free-action", "interchange i0 k")
    page.press("#free-action", "Enter")
    expect(page.locator("#action-error .error")).to_contain_text("is not legal at step 1")

    # undo with the keyboard: the current step goes back to the root
    page.locator("#ir").click(position={"x": 5, "y": 5})
    page.keyboard.press("u")
    expect(page.locator("#tree-0")).to_have_class("step current viewed on-path")
    expect(page.locator("#tree-1")).to_contain_text("split i by 32")          # nothing is lost

    # j/k + Enter applies an action from the list
    page.click("#ir .line[data-ref=j]")
    expect(page.locator("#actions")).to_have_attribute("data-at", "j")
    page.locator("#ir").click(position={"x": 5, "y": 5})
    page.keyboard.press("j")
    first = page.locator("#actions .action-item").first.get_attribute("data-action")
    page.keyboard.press("Enter")
    expect(page.locator("#editor")).to_have_attribute("data-step", "2")
    expect(page.locator("#tree-2")).to_contain_text(first)
    assert page.locator("#tree-0 .branches, #tree-0 ~ li").count() >= 1      # a branch off the root

    # the shared URL in a fresh browser context (another, anonymous visitor)
    share = f"{server.url}/s/{sid}/?step=2"                        # the link carries the viewed step
    expect(page.locator("#share-url")).to_have_value(share)         # (it follows the swap)
    other_ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    other_ctx.set_default_timeout(15000)
    other = other_ctx.new_page()
    other.goto(share)
    expect(other.locator("#tree-1")).to_contain_text("split i by 32")
    expect(other.locator(f"#tree-2")).to_contain_text(first)
    expect(other.locator(".pill", has_text="read-only")).to_be_visible()
    assert other.locator("#free-action").count() == 0 and other.locator("#undo-btn").count() == 0

    # fork it and extend the fork
    other.click("#tree-1 > a")
    expect(other.locator("#editor")).to_have_attribute("data-step", "1")
    other.click("#fork-btn")
    other.wait_for_url(lambda u: f"/s/{sid}/" not in u)
    fork = session_id(other)
    expect(other.locator(".pill.own")).to_be_visible()
    expect(other.locator("#editor")).to_have_attribute("data-step", "1")
    other.fill("#free-action", "split j by 16")
    other.press("#free-action", "Enter")
    expect(other.locator("#editor")).to_have_attribute("data-step", "3")
    expect(other.locator("#tree-3")).to_contain_text("split j by 16")
    other_ctx.close()

    status, original = http("GET", f"{server.url}/api/sessions/{sid}")
    assert status == 200 and len(original["steps"]) == 3            # the fork did not touch it
    status, forked = http("GET", f"{server.url}/api/sessions/{fork}")
    assert forked["forked_from"] == sid and len(forked["steps"]) == 4
    assert not errors, errors


def test_job_update_pushed_in_the_server_reaches_the_page_live(server, context):
    page = context.new_page()
    page.goto(server.url + "/")
    page.click("#kernel-relu button")
    page.wait_for_url("**/s/*/")
    sid = session_id(page)
    page.evaluate("window.__noReload = 1")
    page.wait_for_function("() => document.querySelector('[ws-connect]') && "
                           "document.querySelector('[ws-connect]')['htmx-internal-data'] && "
                           "document.querySelector('[ws-connect]')['htmx-internal-data'].webSocket && "
                           "document.querySelector('[ws-connect]')['htmx-internal-data'].webSocket.socket.readyState === 1")
    for state in ("queued", "running"):
        job = {"id": 9001, "state": state, "step_index": 0, "runner": "local", "result": None}
        assert http("POST", f"{server.url}/__test__/push/{sid}", job)[0] == 200
        expect(page.locator("#job-9001")).to_have_attribute("data-state", state)
    done = {"store": True, "state": "done", "step_index": 0,
            "result": {"runner": "local", "median_s": 0.0025, "min_s": 0.0024, "max_s": 0.0027}}
    status, body = http("POST", f"{server.url}/__test__/push/{sid}", done)
    assert status == 200
    expect(page.locator(f"#job-{body['job']['id']}")).to_have_attribute("data-state", "done")
    expect(page.locator("#t-0")).to_contain_text("2.50 ms")
    assert page.evaluate("window.__noReload") == 1                    # no reload happened


def test_real_benchmark_on_the_local_runner_arrives_live(server, context):
    server.wait(server.runner_online, 60, "the local runner")
    page = context.new_page()
    page.goto(server.url + "/")
    card = page.locator("#kernel-matmul")
    card.locator("details.at-sizes summary").click()                  # a small instance: quick to time
    for name, value in SMALL.items():
        card.locator(f"input[name=size_{name}]").fill(str(value))
    card.locator("button[data-kernel=matmul]").click()
    page.wait_for_url("**/s/*/")
    expect(page.locator(".session-head")).to_contain_text("N=48, M=48, K=48")
    expect(page.locator(".pill.own")).to_be_visible()
    page.select_option("#bench-form select", "local")
    page.click("#bench-btn")
    expect(page.locator("#jobs li").first).to_have_attribute("data-state", "done", timeout=60000)
    page.click("#ir .line[data-ref=j]")
    page.click("button.action-item[data-action='vectorize j']") if page.locator(
        "button.action-item[data-action='vectorize j']").count() else page.click(
        "button.action-item[data-action='split j by 16']")
    expect(page.locator("#editor")).to_have_attribute("data-step", "1")
    page.click("#bench-btn")
    expect(page.locator("#t-1 .speedup")).to_be_visible(timeout=60000)
    expect(page.locator("#speedup-plot svg")).to_be_visible()
    expect(page.locator("#actions .group").first).to_be_visible()
    rows = page.locator("#bench-results table.results tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("local")
    shot(page, "benchmark")

"""Browser tests of the history tree, sharing and schedules as text: Playwright driving
Debian's chromium against the real server (``python -m webapp.launch``: daphne, the local
runner and the agents worker), as tests/browser/test_web_agents_browser.py does.

* An agent run becomes one collapsed node of the tree (screenshot
  ``var/test-artifacts/browser/agent-run-collapsed.png``); the view leaves the run's start
  step for its best step when it ends; viewers' trees and step counts follow live; the
  order of the tree does not depend on the viewed step; the best path is marked; "measured
  only" hides the unmeasured steps; the tree scrolls to the viewed step; the plot's line
  follows the viewed branch.
* The share link carries the viewed step; a fork keeps the benchmark results; "Copy as
  .steps" copies the path; a pasted .steps text with an illegal line is refused with the
  line named and nothing applied, a legal one is replayed.
"""
from __future__ import annotations

import pytest

from browser_support import WS_OPEN, http, new_matmul, served, session_id, shot, watched_page

from playwright.sync_api import expect

pytestmark = [pytest.mark.xdist_group("browser_history")]

TREE_ORDER = "() => Array.from(document.querySelectorAll('#tree li.step')).map(li => li.id)"
DEEPEST_MEASURED = """() => {
  const depth = el => { let d = 0; while (el && el.dataset.parent !== undefined) { d++; el = document.getElementById('tree-' + el.dataset.parent); } return d; };
  const all = Array.from(document.querySelectorAll('#tree li.step[data-measured]'));
  all.sort((a, b) => depth(b) - depth(a) || a.dataset.index - b.dataset.index);
  return all[0].dataset.index; }"""
PLOT_BRANCH = """() => {
  const path = [], seen = {};
  let el = document.getElementById('tree-' + document.getElementById('editor').dataset.step);
  while (el && !seen[el.id]) { seen[el.id] = 1; path.unshift(el.dataset.index);
    el = el.dataset.parent === undefined ? null : document.getElementById('tree-' + el.dataset.parent); }
  const line = document.querySelector('svg.plot polyline.branch-line[data-runner=local]');
  const dots = Array.from(document.querySelectorAll('svg.plot circle[data-runner=local]'));
  const on = dots.filter(c => path.includes(c.dataset.step));
  const expected = on.sort((a, b) => path.indexOf(a.dataset.step) - path.indexOf(b.dataset.step))
                     .map(c => c.getAttribute('cx') + ',' + c.getAttribute('cy')).join(' ');
  return {points: line ? line.getAttribute('points') : null, expected: on.length > 1 ? expected : '',
          on: on.length, off: dots.length - on.length,
          faded: dots.filter(c => c.classList.contains('off-branch')).length};
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from served(tmp_path_factory.mktemp("browser-history"), runner_online=True)


def new_live_matmul(page, server, size=8):
    """``new_matmul``, once the editor's websocket is open."""
    sid = new_matmul(page, server, size)
    page.wait_for_function(WS_OPEN)
    return sid


def test_agent_run_is_one_collapsed_node_and_the_view_moves_to_its_best_step(server, context, browser):
    page, errors = watched_page(context)
    sid = new_live_matmul(page, server)
    page.evaluate("window.__noReload = 1")

    # a viewer with the share link, watching live
    share = page.locator("#share-url").input_value()
    assert share == f"{server.url}/s/{sid}/?step=0"
    viewer_ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    viewer_ctx.set_default_timeout(20000)
    viewer, _ = watched_page(viewer_ctx, errors)
    viewer.goto(share)
    viewer.wait_for_function(WS_OPEN)
    expect(viewer.locator("#step-count")).to_have_text("1 step")

    page.select_option("#agent-name", "random")
    page.fill("#agent-budget", "8")
    page.select_option("#agent-form select[name=runner]", "local")
    page.click("#agent-start")
    run = page.locator("#agent-runs li").first
    expect(run).to_have_attribute("data-state", "running", timeout=30000)
    run_id = run.get_attribute("id").split("-")[-1]

    # while it runs its node is open and the viewer's tree and step count follow
    expect(viewer.locator("#tree-2")).to_be_visible(timeout=90000)
    expect(viewer.locator(f"#tree .run-node[data-run='{run_id}'] > details")).to_have_attribute("open", "")
    expect(viewer.locator("#step-count")).not_to_have_text("1 step")

    # the run ends: the owner's view leaves step 0 for the run's best step (its newest step
    # when the root stayed the fastest), without a reload
    expect(run).to_have_attribute("data-state", "done", timeout=120000)
    best = page.locator("#agent-runs li").first.get_attribute("data-best")
    _, history = http("GET", f"{server.url}/api/sessions/{sid}")
    n = len(history["steps"])
    moved_to = best if best not in (None, "0") else str(n - 1)
    expect(page.locator("#editor")).to_have_attribute("data-step", moved_to)
    assert page.url.endswith(f"/s/{sid}/?step={moved_to}")
    assert page.evaluate("window.__noReload") == 1
    expect(page.locator("#share-url")).to_have_value(f"{server.url}/s/{sid}/?step={moved_to}")
    expect(page.locator(f"#tree-{moved_to}")).to_have_class(
        "step current viewed on-path" if moved_to == best else "step viewed on-path")
    for p in (page, viewer):
        expect(p.locator("#tree li.step")).to_have_count(n)
        expect(p.locator("#step-count")).to_have_text(f"{n} steps")
    # the viewer got every result with its step: the same steps carry a time on both pages
    measured = page.locator("#tree li.step[data-measured]")
    expect(viewer.locator("#tree li.step[data-measured]")).to_have_count(measured.count())
    for index in measured.evaluate_all("els => els.map(e => e.dataset.index)"):
        expect(viewer.locator(f"#t-{index} .time")).to_have_text(page.locator(f"#t-{index} .time").inner_text())
    viewer_ctx.close()

    # one speedup for the best step: the agent panel, the results table and the API agree
    # (over the root timed in the run's batch on the same runner, never a root from elsewhere)
    if best is not None:
        _, run_json = http("GET", f"{server.url}/api/agents/{run_id}")
        said = f"{run_json['best']['speedup']:.2f}×"
        expect(page.locator(f"#agent-run-{run_id} .speedup")).to_have_text(said)
        row = page.locator(f"#bench-results table.results tbody tr[data-step='{best}'][data-runner=local] td.speedup")
        expect(row.filter(has_text=said).first).to_be_visible()
        assert "speedup_over_start" in run_json["best"]

    # a fresh visitor at step 0: the whole run is one collapsed node
    visitor, _ = watched_page(context, errors)
    visitor.goto(f"{server.url}/s/{sid}/?step=0")
    node = visitor.locator(f"#tree .run-node[data-run='{run_id}']")
    expect(node).to_have_count(1)
    expect(node.locator("> details")).not_to_have_attribute("open", "")
    expect(node.locator("summary")).to_contain_text(f"random run #{run_id}")
    expect(node.locator("summary")).to_contain_text(f"{n - 1} steps")
    expect(visitor.locator("#tree-1")).to_be_hidden()
    assert visitor.evaluate("() => document.getElementById('history').getBoundingClientRect().height") < 500
    shot(visitor, "agent-run-collapsed")

    # the best path: the best step and every step on the way to it
    expect(visitor.locator("#tree li.step[data-best]")).to_have_count(1)
    marked = visitor.evaluate("""() => {
      const best = document.querySelector('#tree li.step[data-best]'); const out = [];
      for (let el = best; el; el = el.dataset.parent === undefined ? null : document.getElementById('tree-' + el.dataset.parent))
        out.push([el.dataset.index, el.hasAttribute('data-best-path')]);
      return {best: best.dataset.index, path: out,
              all: document.querySelectorAll('#tree li.step[data-best-path]').length}; }""")
    assert all(flag for _, flag in marked["path"]) and marked["all"] == len(marked["path"])
    expect(node).to_have_class("run-node has-best" if marked["best"] != "0" else "run-node")

    # expand it; the order of the tree is the same whichever step is viewed
    node.locator("summary .run-label").click()
    expect(visitor.locator("#editor")).to_have_attribute("data-step", "0")
    expect(visitor.locator("#tree-1")).to_be_visible()
    order_at_root = visitor.evaluate(TREE_ORDER)
    deepest = visitor.evaluate(DEEPEST_MEASURED)
    visitor.click(f"#tree-{deepest} > a")
    expect(visitor.locator("#editor")).to_have_attribute("data-step", deepest)
    assert visitor.evaluate(TREE_ORDER) == order_at_root

    # the plot's line joins the measured steps of the viewed branch only
    visitor.wait_for_function(f"() => {{ const p = ({PLOT_BRANCH})(); return p.points === p.expected; }}")
    plot = visitor.evaluate(PLOT_BRANCH)
    assert plot["on"] >= 2 and plot["points"] == plot["expected"] and plot["faded"] == plot["off"]

    # the tree scrolls to the viewed step in its own box
    visitor.click("#tree-0 > a")
    expect(visitor.locator("#editor")).to_have_attribute("data-step", "0")
    visitor.add_style_tag(content="#tree-box { max-height: 90px !important; }")
    last = n - 1
    visitor.click(f"#tree-{last} > a")
    expect(visitor.locator("#editor")).to_have_attribute("data-step", str(last))
    visitor.wait_for_function(f"""() => {{
      const box = document.getElementById('tree-box'), b = box.getBoundingClientRect();
      const r = document.querySelector('#tree-{last} > a').getBoundingClientRect();
      return box.scrollTop > 0 && r.height > 0 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1; }}""")

    # "measured only" hides the row of a step without a measurement (here one the owner adds)
    _, legal = http("GET", f"{server.url}/api/sessions/{sid}/actions?step=0")
    taken = {st["text"] for st in history["steps"] if st["parent"] == 0}
    fresh = next(a["text"] for a in legal["actions"] if a["text"] not in taken)
    visitor.click("#tree-0 > a")
    expect(visitor.locator("#editor")).to_have_attribute("data-step", "0")
    visitor.fill("#free-action", fresh)
    visitor.press("#free-action", "Enter")
    expect(visitor.locator("#editor")).to_have_attribute("data-step", str(n))
    visitor.click("#tree-0 > a")
    expect(visitor.locator("#editor")).to_have_attribute("data-step", "0")
    expect(visitor.locator(f"#tree-{n}")).not_to_have_attribute("data-measured", "1")
    visitor.check("#tree-measured-only")
    expect(visitor.locator(f"#tree-{n} > a")).to_be_hidden()
    expect(visitor.locator("#tree li.step[data-measured] > a").last).to_be_visible()
    expect(visitor.locator("#tree-0 > a")).to_be_visible()
    visitor.uncheck("#tree-measured-only")
    expect(visitor.locator(f"#tree-{n} > a")).to_be_visible()
    assert not errors, errors


def test_share_fork_with_results_copy_and_replay_steps(server, context, browser):
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page, errors = watched_page(context)
    sid = new_live_matmul(page, server)
    page.fill("#free-action", "split i by 4")
    page.press("#free-action", "Enter")
    expect(page.locator("#editor")).to_have_attribute("data-step", "1")
    expect(page.locator("#share-url")).to_have_value(f"{server.url}/s/{sid}/?step=1")

    # a measured step
    page.select_option("#bench-form select", "local")
    page.click("#bench-btn")
    expect(page.locator("#t-1 .time")).to_be_visible(timeout=60000)
    expect(page.locator("#tree-1")).to_have_attribute("data-measured", "1")

    # the viewer lands on the shared step and sees the owner's next step arrive
    other_ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    other_ctx.set_default_timeout(20000)
    other, _ = watched_page(other_ctx, errors)
    other.goto(page.locator("#share-url").input_value())
    expect(other.locator("#editor")).to_have_attribute("data-step", "1")
    expect(other.locator("#t-1 .time")).to_be_visible()
    other.wait_for_function(WS_OPEN)
    page.fill("#free-action", "split j by 2")
    page.press("#free-action", "Enter")
    expect(page.locator("#editor")).to_have_attribute("data-step", "2")
    expect(other.locator("#tree-2")).to_contain_text("split j by 2")
    expect(other.locator("#step-count")).to_have_text("3 steps")
    expect(other.locator("#editor")).to_have_attribute("data-step", "1")       # the viewer stays where it was
    expect(other.locator("#tree-1")).to_have_class("step viewed on-path")

    # its fork keeps the measurement, marked with the runner
    other.click("#fork-btn")
    other.wait_for_url(lambda u: f"/s/{sid}/" not in u)
    fork = session_id(other)
    expect(other.locator("#t-1 .time")).to_be_visible()
    _, forked = http("GET", f"{server.url}/api/sessions/{fork}")
    results = [r for s in forked["steps"] for r in (s.get("results") or [])]
    assert results and all("local" in str(r) for r in results), forked["steps"]
    other_ctx.close()

    # copy the path as .steps
    page.click("#steps-panel > summary")
    expect(page.locator("#steps-text")).to_have_value(f"# matmul: session {sid}, step 2 (2 steps)\n"
                                                      "# sizes: N=8, M=8, K=8\nsplit i by 4\nsplit j by 2\n")
    page.click("#copy-steps")
    expect(page.locator("#copy-status")).to_have_text("copied 2 steps")
    assert page.evaluate("() => navigator.clipboard.readText()").endswith("split i by 4\nsplit j by 2\n")

    # paste: an illegal second line is named, and nothing is applied
    page.fill("#replay-text", "split i1 by 2\nsplit q by 3\n")
    page.click("#replay-btn")
    expect(page.locator("#replay-error")).to_contain_text("line 2: 'split q by 3' is not legal there")
    expect(page.locator("#replay-error")).to_contain_text("nothing was applied")
    expect(page.locator("#tree li.step")).to_have_count(3)
    expect(page.locator("#replay-policy")).to_contain_text("nothing is applied")

    # a legal text is replayed onto the viewed step
    page.fill("#replay-text", "# tile\ninterchange i1 j0\nsplit i1 by 2  # pairs\n")
    page.click("#replay-btn")
    expect(page.locator("#editor")).to_have_attribute("data-step", "4")
    expect(page.locator("#tree-3")).to_contain_text("interchange i1 j0")
    expect(page.locator("#tree-4")).to_contain_text("split i1 by 2")
    assert page.url.endswith(f"/s/{sid}/?step=4")
    assert not errors, errors

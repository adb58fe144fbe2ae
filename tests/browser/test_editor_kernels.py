"""Browser tests of writing kernels and of the pages around the editor: the "new kernel"
page (a highlighting editor, the checker's message at its line, the session titled by the
kernel's name), a session's sizes changed into a new session, the dark theme and its
toggle, the 390 x 844 layout (nothing wider than the screen, unified diff), and every
group of legal actions visible at the root.

Screenshots: ``new-kernel-error``, ``layout-390`` (the editor at 390 px) and ``dark-theme``
under ``var/test-artifacts/browser/``."""
from __future__ import annotations

import pytest

from browser_support import session_id, shot, watched_page
from playwright.sync_api import expect

from dojo_core import kernels

pytestmark = [pytest.mark.xdist_group("browser")]

BAD = "kernel shift(N = 4)\nin  A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i + 1]\n"
GOOD = BAD.replace("A[i + 1]", "A[i]")
FIXED = "kernel copy8(N = 8)\nin  A: f32[8]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = A[i]\n"
DARK_BG = "rgb(13, 17, 23)"


def scroll_width(page) -> int:
    return page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")


def new_kernel(page, server, source):
    """The new kernel page, reached from the header's link, with ``source`` typed in."""
    page.goto(server.url + "/runners/")
    page.click("#new-kernel-link")
    page.wait_for_url("**/new")
    expect(page.locator("#code-editor")).to_have_class("code-editor hl live")
    page.fill("#source", source)


def test_new_kernel_error_at_its_line_then_session_titled_by_its_name(server, context):
    page, errors = watched_page(context)
    new_kernel(page, server, BAD)
    # highlighted as typed, in a monospace font
    expect(page.locator("#source-overlay .ol[data-line='1'] .k")).to_have_text("kernel")
    expect(page.locator("#source-overlay .ol[data-line='1'] .nf")).to_have_text("shift")
    expect(page.locator("#source-overlay .ol[data-line='5'] .nv")).to_have_text("i")
    assert "mono" in page.eval_on_selector("#source", "e => getComputedStyle(e).fontFamily").lower()

    page.click("#start-btn")
    bad_line = page.locator("#source-overlay .ol.bad")
    expect(bad_line).to_have_count(1)
    expect(bad_line).to_have_attribute("data-line", "6")
    expect(bad_line.locator(".inline-error")).to_have_text(
        "6:10: A[i + 1] can be out of bounds: i + 1 = 4, outside 0..4 (dimension 0) (e.g. at i = 3)")
    expect(page.locator("#source-gutter .gl.bad")).to_have_text("6")
    # drawn on line 6 of the text: five line heights below the first line
    top = page.eval_on_selector("#source-overlay .ol[data-line='1']", "e => e.getBoundingClientRect().top")
    box = bad_line.bounding_box()
    assert abs(box["y"] - top - 5 * box["height"]) <= 1, (box, top)
    assert page.url.endswith("/new")
    shot(page, "new-kernel-error")

    # the listed message puts the caret at line 6, column 10
    page.click(".goto-error")
    assert page.evaluate("document.activeElement.id") == "source"
    assert page.eval_on_selector("#source", "e => e.selectionStart") == BAD.index("A[i + 1]")

    # editing clears the marks; Check accepts the fixed kernel without starting a session
    page.fill("#source", GOOD)
    expect(page.locator("#source-overlay .ol.bad")).to_have_count(0)
    page.click("#check-btn")
    expect(page.locator("#paste-verdict .ok")).to_have_text("The checker accepts kernel shift at sizes N=4.")
    assert page.url.endswith("/new")

    page.click("#start-btn")
    page.wait_for_url("**/s/*/")
    expect(page.locator(".session-head h1 .kernel")).to_have_text("shift")
    assert page.title().startswith("shift · ")
    assert errors == []


TRICKY = """local t: f32[4] in register
  for i0 in 0..(N + 31) // 32 parallel:
    for x in 0..min(8, N - 8 * i0) gpu.thread.x:
      C[i] max= select(A[i] < 2, 1.5e3, -inf) * rsqrt(B[i % 4]) $ # note: ..
"""
RUNS = """(e, line) => { const d = document.createElement('div'); d.innerHTML = line;
    const runs = []; d.childNodes.forEach(n => { const c = n.nodeType === 1 ? n.className : '';
        const t = n.textContent; if (!t) return;
        if (runs.length && runs[runs.length - 1][0] === c) runs[runs.length - 1][1] += t; else runs.push([c, t]); });
    return runs; }"""


def test_editor_highlighting_matches_the_pygments_lexer(server, context):
    """Typed text is coloured as the server's Pygments lexer colours it, token for token,
    on every line of every library kernel and on some rarer constructs."""
    page = context.new_page()
    text = "\n".join(kernels.kernel_path(k).read_text() for k in kernels.list_kernels()) + TRICKY
    new_kernel(page, server, text)
    typed = page.eval_on_selector_all("#source-overlay .ol", "ls => ls.map(l => l.innerHTML)")
    page.click("#check-btn")                                # the server's answer: Pygments' lines
    expect(page.locator("#paste-verdict .checker")).to_be_visible()
    served = page.eval_on_selector_all("#source-overlay .ol", "ls => ls.map(l => { "
                                       "l.querySelectorAll('.inline-error').forEach(e => e.remove()); "
                                       "return l.innerHTML; })")
    assert len(typed) == len(served) == len(text.split("\n"))
    for no, (mine, theirs) in enumerate(zip(typed, served), start=1):
        assert page.evaluate(f"({RUNS})(null, {mine!r})") == page.evaluate(f"({RUNS})(null, {theirs!r})"), \
            (no, text.split("\n")[no - 1])


def test_sizes_of_a_session_start_a_new_one_checked_at_those_sizes(server, context):
    page = context.new_page()
    new_kernel(page, server, FIXED)
    page.click("#start-btn")
    page.wait_for_url("**/s/*/")
    first = session_id(page)
    expect(page.locator("#sizes-edit summary")).to_have_text("sizes N=8")

    # at N=16 the fixed-size input A[8] is read out of bounds: refused with the reason, in place
    page.click("#sizes-edit summary")
    page.fill("input[name=size_N]", "16")
    page.click("#sizes-btn")
    expect(page.locator("#sizes-error .error")).to_contain_text("A[i] can be out of bounds")
    assert session_id(page) == first

    # at N=4 a new session starts, its root at the new size, titled as before
    page.fill("input[name=size_N]", "4")
    page.click("#sizes-btn")
    page.wait_for_url(lambda url: "/s/" in url and first not in url)
    expect(page.locator("#sizes-edit summary")).to_have_text("sizes N=4")
    expect(page.locator(".session-head h1 .kernel")).to_have_text("copy8")
    expect(page.locator("#ir .line").first).to_contain_text("kernel copy8(N = 4)")


def test_dark_theme_follows_the_browser_and_the_toggle_is_remembered(server, browser):
    light = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
    try:
        page = light.new_page()
        page.goto(server.url + "/")
        assert page.eval_on_selector("body", "e => getComputedStyle(e).backgroundColor") == "rgb(255, 255, 255)"
        expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", "false")
        page.click("#theme-toggle")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", "true")
        assert page.eval_on_selector("body", "e => getComputedStyle(e).backgroundColor") == DARK_BG
        assert page.evaluate("localStorage.getItem('dojo-theme')") == "dark"
        # remembered on the next page, the editor included (its IR highlighted in dark colours)
        page.click("#kernel-matmul button")
        page.wait_for_url("**/s/*/")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        assert page.eval_on_selector("body", "e => getComputedStyle(e).backgroundColor") == DARK_BG
        assert page.eval_on_selector("#ir .k", "e => getComputedStyle(e).color") == "rgb(255, 123, 114)"
        # a size in the header (Pygments' "no") is coloured as a constant, not laid out as a line number
        size_name = page.eval_on_selector("#ir code .no", "e => [getComputedStyle(e).color, "
                                                            "getComputedStyle(e).paddingRight]")
        assert size_name == ["rgb(255, 166, 87)", "0px"]
        expect(page.locator("#actions button.action-item").first).to_be_visible()
        shot(page, "dark-theme")
        page.click("#theme-toggle")
        expect(page.locator("html")).to_have_attribute("data-theme", "light")
        assert page.eval_on_selector("body", "e => getComputedStyle(e).backgroundColor") == "rgb(255, 255, 255)"
    finally:
        light.close()
    dark = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="dark")
    try:
        page = dark.new_page()
        page.goto(server.url + "/")
        assert page.eval_on_selector("body", "e => getComputedStyle(e).backgroundColor") == DARK_BG
        expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", "true")
    finally:
        dark.close()


def test_390_layout_has_no_sideways_scroll_and_a_unified_diff(server, browser):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    ctx.set_default_timeout(15000)
    try:
        page = ctx.new_page()
        page.goto(server.url + "/")
        expect(page.locator("#kernel-matmul")).to_be_visible()
        assert scroll_width(page) <= 390
        page.goto(server.url + "/new")
        assert scroll_width(page) <= 390
        page.goto(server.url + "/")
        page.click("#kernel-matmul button")
        page.wait_for_url("**/s/*/")
        page.click("#ir .line[data-ref=i]")
        page.click("button.action-item[data-action='split i by 32']")
        expect(page.locator("#editor")).to_have_attribute("data-step", "1")
        expect(page.locator("#diff table.diff.unified")).to_be_visible()
        expect(page.locator("#actions button.action-item").first).to_be_visible()
        assert scroll_width(page) <= 390
        # stacked panes: history, code, actions one under the other, each within the screen
        boxes = [page.locator(sel).bounding_box() for sel in ("#history", "#code", "#side", "#diff")]
        assert all(b["x"] >= 0 and b["x"] + b["width"] <= 390 for b in boxes), boxes
        assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"] < boxes[3]["y"], boxes
        shot(page, "layout-390")
        page.goto(server.url + "/api/docs")
        assert scroll_width(page) <= 390
    finally:
        ctx.close()


def test_every_action_group_is_visible_at_the_root(server, context):
    page = context.new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(server.url + "/")
    page.click("#kernel-matmul button")
    page.wait_for_url("**/s/*/")
    groups = page.locator("#actions details.group")
    expect(groups.first).to_be_visible()
    kinds = groups.evaluate_all("gs => gs.map(g => g.dataset.kind)")
    assert {"split", "vectorize", "stage", "accumulate", "parallelize"} <= set(kinds), kinds
    # every group open, its name in the index at the top, no box of the side panel clipping them
    assert groups.evaluate_all("gs => gs.every(g => g.open)")
    expect(page.locator("#actions .group-index a")).to_have_count(len(kinds))
    clipped = page.evaluate("""() => {
        const out = [];
        for (let e = document.querySelector('#actions .groups'); e && e.id !== 'editor'; e = e.parentElement) {
            const s = getComputedStyle(e);
            if (['auto', 'scroll', 'hidden'].includes(s.overflowY) && e.scrollHeight > e.clientHeight + 1)
                out.push(e.id || e.className);
        }
        return out; }""")
    assert clipped == []
    for kind in ("vectorize", "stage", "accumulate"):
        item = page.locator(f"#actions details.group[data-kind={kind}] .action-item").first
        item.scroll_into_view_if_needed()
        expect(item).to_be_visible()
        hit = item.evaluate("""e => { const r = e.getBoundingClientRect();
            return e.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)); }""")
        assert hit, kind
    # a group can be folded away and opened again
    page.click("#actions details.group[data-kind=split] > summary")
    expect(page.locator("#actions details.group[data-kind=split] .action-item").first).to_be_hidden()
    page.click("#actions details.group[data-kind=split] > summary")
    expect(page.locator("#actions details.group[data-kind=split] .action-item").first).to_be_visible()


def test_server_log_has_no_background_chatter(server, context):
    """The real server (daphne, the local runner beating every 0.5 s, websockets): one line
    for the page, one for a 404, none for heartbeats, static files or websockets."""
    page = context.new_page()
    page.goto(server.url + "/")
    page.click("#kernel-matmul button")
    page.wait_for_url("**/s/*/")
    sid = session_id(page)
    page.goto(server.url + "/no-such-page")
    server.wait(server.runner_online, 30, "the local runner")
    page.wait_for_timeout(1500)                                  # heartbeats, the websocket
    log = server.log_path.read_text(errors="replace")
    assert "heartbeat" not in log and "/static/" not in log and "WSCONNECT" not in log
    assert "Twisted reactor" not in log and "superuser privileges" not in log and "No hostname" not in log
    assert log.count(f'"GET /s/{sid}/" 200') == 1 and log.count("/no-such-page") == 1

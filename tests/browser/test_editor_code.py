"""Browser tests of the code views: statement ids in the IR gutter; the assembly tab with
the C and its assembly colour-matched, and the IR, C and assembly lines of one statement
lit together on hover; the diff views' whole lines, folded unchanged runs that open on
click, and changes marked within lines.

Screenshots ``assembly-tab`` and ``diff-intraline`` go under ``var/test-artifacts/browser/``.
"""
from __future__ import annotations

import json
import re
import urllib.request

import pytest

from browser_support import SMALL, shot, watched_page
from playwright.sync_api import expect

pytestmark = [pytest.mark.xdist_group("browser")]

STEPS = ["fission j after s0", "interchange j2 k", "vectorize j2", "parallelize i"]


def api(server, path, data, token=None):
    req = urllib.request.Request(server.url + path, data=json.dumps(data).encode(), method="POST",
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Token {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def scheduled_session(server) -> tuple:
    """(session id, last step index) of matmul at small sizes after STEPS."""
    made = api(server, "/api/sessions", {"kernel": "matmul", "sizes": SMALL})
    parent = 0
    for text in STEPS:
        step = api(server, f"/api/sessions/{made['id']}/steps", {"parent": parent, "action": text},
                   made["owner_token"])
        parent = step["index"]
    return made["id"], parent


def test_assembly_tab_colour_matches_c_and_links_ir_c_and_assembly(server, context):
    sid, last = scheduled_session(server)
    page, errors = watched_page(context)
    page.goto(f"{server.url}/s/{sid}/?step={last}")

    # statement ids in the IR gutter, beside the line numbers
    expect(page.locator("#ir .line[data-ref=s0] .sref")).to_have_text("s0")
    expect(page.locator("#ir .line[data-ref=s1] .sref")).to_have_text("s1")
    expect(page.locator("#ir .line[data-ref=i] .sref")).to_have_text("")

    # the assembly tab: the step's C and the assembly of the local build
    page.click("#diff a.tab[data-code=asm]")
    expect(page.locator("#diff h2")).to_have_text(f"Step {last}: C and assembly")
    expect(page.locator("#asm-lines .al[data-c]").first).to_be_visible()
    expect(page.locator("#asm-view .asm-meta")).to_contain_text("-g -S kernel.c")
    checked = page.evaluate("""() => {
        const colour = el => (el.className.match(/\\bhc(\\d)\\b/) || [])[1];
        let n = 0;
        for (const a of document.querySelectorAll('#asm-lines .al[data-c]')) {
            if (colour(a) === undefined) continue;
            const c = document.querySelector('#c-lines .cl[data-c="' + a.dataset.c + '"]');
            if (!c || colour(c) !== colour(a)) return -1;
            n++;
        }
        return n;
    }""")
    assert checked > 10                              # every coloured instruction has its C line's colour

    # hover the update statement in the IR: its C lines and their instructions light up
    page.hover("#ir .line[data-ref=s1]")
    expect(page.locator("#c-lines .cl.linked").first).to_be_visible()
    expect(page.locator("#ir .line[data-ref=s1]")).to_have_class("line clickable statement")
    assert page.locator("#asm-lines .al.linked").count() >= 1
    # hover a C line of the loop over i: its IR line lights up
    ir_line = page.locator("#ir .line[data-ref=i]").get_attribute("id")[1:]
    page.hover(f"#c-lines .cl[data-ir='{ir_line}'] >> nth=0")
    expect(page.locator("#ir .line[data-ref=i]")).to_have_class("line clickable loop linked")
    expect(page.locator("#ir .line[data-ref=s1]")).not_to_have_class("line clickable statement linked")
    # a click pins the statement: its lines stay lit when the pointer leaves
    page.click("#ir .line[data-ref=s1]")
    page.hover("#diff h2")
    expect(page.locator("#ir .line[data-ref=s1]")).to_have_class("line clickable statement selected")
    expect(page.locator("#c-lines .cl.linked").first).to_be_visible()
    assert page.locator("#asm-lines .al.linked").count() >= 1
    # a C line of the update: its instructions and its IR line light up with it
    page.locator("#asm-view").scroll_into_view_if_needed()
    s1_line = page.locator("#ir .line[data-ref=s1]").get_attribute("id")[1:]
    update = page.locator(f"#c-lines .cl[data-ir='{s1_line}']").first
    update.hover()
    expect(update).to_have_class(re.compile(r"\blinked\b"))
    expect(page.locator("#ir .line[data-ref=s1]")).to_have_class(re.compile(r"\blinked\b"))
    c_no = update.get_attribute("data-c")
    expect(page.locator(f"#asm-lines .al.linked[data-c='{c_no}']").first).to_be_visible()
    assert page.locator("#asm-lines .al.linked").count() == page.locator(f"#asm-lines .al[data-c='{c_no}']").count()
    shot(page, "assembly-tab")
    assert not errors, errors


def test_diffs_show_whole_lines_open_folds_and_mark_changes_within_lines(server, context):
    sid, last = scheduled_session(server)
    page, errors = watched_page(context)
    # the vectorize step: one IR line changes by one word
    page.goto(f"{server.url}/s/{sid}/?step={last - 1}")
    change = page.locator("#diff table.split tr.change").first
    expect(change.locator("td.b mark.ch")).to_have_text("vector")
    expect(change.locator("td.a mark.ch")).to_have_count(0)     # nothing was removed from the line

    # the C of that step: long vector lines are shown whole, and unchanged runs are folded
    page.click("#diff a.tab[data-code=c]")
    expect(page.locator("#diff table[data-code=c]")).to_be_visible()
    clipped = page.evaluate("""() => Array.from(document.querySelectorAll('#diff td.a, #diff td.b'))
        .filter(td => td.offsetParent && td.scrollWidth > td.clientWidth + 1).length""")
    assert clipped == 0
    longest = page.evaluate("""() => Math.max(...Array.from(document.querySelectorAll('#diff td.b'))
        .map(td => td.textContent.length))""")
    assert longest > 100                                         # a long line, wrapped, not cut
    assert "…" not in page.locator("#diff").inner_text()
    fold = page.locator("#diff tr.skip button.unfold").first
    expect(fold).to_be_visible()
    fold_id = fold.get_attribute("data-fold")
    hidden = page.locator(f"#diff tr.folded[data-fold='{fold_id}']")
    count = hidden.count()
    assert count >= 1 and not hidden.first.is_visible()
    fold.click()
    expect(hidden.first).to_be_visible()
    expect(hidden.nth(count - 1)).to_be_visible()
    expect(page.locator(f"#diff tr.skip[data-fold='{fold_id}']")).to_have_count(0)

    # unified: the same marks within the changed lines
    page.click("#diff a.tab[data-code=ir]")
    expect(page.locator("#diff")).to_have_attribute("data-code", "ir")    # its own links name the IR
    page.click("#mode-unified")
    expect(page.locator("#diff table.unified tr.add mark.ch").first).to_have_text("vector")
    page.click("#mode-split")
    expect(page.locator("#diff table.split tr.change td.b mark.ch").first).to_be_visible()
    page.locator("#diff").scroll_into_view_if_needed()
    shot(page, "diff-intraline")
    assert not errors, errors

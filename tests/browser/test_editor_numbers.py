"""Browser tests of the numbers in the editor (Playwright, Debian's chromium, the real server
with its real local runner):

* after a benchmark of a step, its result card sits above the fold at 1440 x 900, with the
  median, its spread (IQR and a box), the speedup over the root timed in the same job, GFLOP/s
  and GB/s with their share of the local runner's measured peaks, and the provenance
  (verified, max error, threads, compiler, flags); the table has a roofline with the step's dot;
* a noisy result is flagged and its re-run button benchmarks the step again;
* a step with gpu binds is refused with the reason, before and after clicking Run.

Screenshots go to ``var/test-artifacts/browser/`` (``editor-after-benchmark.png``, ...).
"""
from __future__ import annotations

import pytest

from browser_support import SMALL, http, session_id, shot
from playwright.sync_api import expect

pytestmark = [pytest.mark.xdist_group("browser")]

FOLD = {"width": 1440, "height": 900}


def new_session(page, server, kernel="matmul", sizes=SMALL):
    """A session of this browser at ``sizes`` (POST /new with the page's CSRF cookie); its editor."""
    page.goto(server.url + "/new")
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    form = {"kernel": kernel, "csrfmiddlewaretoken": token, **{f"size_{k}": str(v) for k, v in sizes.items()}}
    answer = page.request.post(server.url + "/new", form=form, headers={"Referer": server.url + "/new"})
    assert answer.ok and "/s/" in answer.url, answer.text()[:500]
    page.goto(answer.url)
    expect(page.locator(".pill.own")).to_be_visible()
    return session_id(page)


def apply_step(page, ref, action, step):
    page.click(f"#ir .line[data-ref={ref}]")
    page.click(f"button.action-item[data-action='{action}']")
    expect(page.locator("#editor")).to_have_attribute("data-step", str(step))


def in_view(page, selector) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= page.viewport_size["height"]


def test_benchmark_numbers_are_shown_above_the_fold_with_spread_peaks_and_provenance(server, context):
    server.wait(server.runner_online, 60, "the local runner")
    _, runners = http("GET", server.url + "/api/runners")
    local = next(r for r in runners["runners"] if r["name"] == "local")
    assert local["peaks"]["gflops"] > 0 and local["peaks"]["gbytes_per_s"] > 0   # measured at registration
    page = context.new_page()
    page.set_viewport_size(FOLD)
    new_session(page, server)
    apply_step(page, "j", "split j by 16", 1)
    expect(page.locator("#step-unmeasured")).to_contain_text("not measured yet")
    page.select_option("#bench-form select", "local")
    page.click("#bench-btn")
    card = page.locator("#step-results .result-card")
    expect(card).to_be_visible(timeout=90000)
    expect(page.locator("#step-results")).to_have_attribute("data-step", "1")
    expect(card.locator(".median")).to_contain_text("s")                  # a time with its unit
    expect(card.locator(".spread")).to_contain_text("IQR")
    expect(card.locator("svg.spread-bar")).to_be_visible()
    expect(card.locator(".speedup")).to_contain_text("×")
    expect(card.locator(".baseline")).to_contain_text("timed in the same job")
    expect(card.locator(".gflops")).to_contain_text("of FMA peak")
    expect(card.locator(".gbps")).to_contain_text("of bandwidth peak")
    expect(card.locator(".roof-share")).to_contain_text("of roofline")
    expect(card.locator(".verified")).to_have_text("verified vs interp")
    expect(card.locator(".max-error")).to_contain_text("× tol")
    expect(card.locator(".threads")).to_contain_text("thread")
    expect(card.locator(".compiler")).not_to_be_empty()
    card.locator("details.flags summary").click()
    expect(card.locator("details.flags code")).to_contain_text("-O3")
    assert in_view(page, "#step-results .result-card"), "the result card is below the fold at 1440 x 900"
    # the table agrees, and the roofline has the step's dot
    row = page.locator("#bench-results table.results tbody tr[data-step='1']")
    expect(row).to_have_count(1)
    expect(row.locator(".speedup")).to_have_text(card.locator(".speedup").inner_text())
    expect(row.locator(".gbps")).not_to_be_empty()
    expect(page.locator("#bench-results svg.roofline circle.dot[data-step='1']")).to_have_count(1)
    shot(page, "editor-after-benchmark")


def test_a_noisy_result_is_flagged_and_rerun_on_request(server, context):
    server.wait(server.runner_online, 60, "the local runner")
    page = context.new_page()
    page.set_viewport_size(FOLD)
    sid = new_session(page, server)
    apply_step(page, "j", "split j by 16", 1)
    page.wait_for_function("() => { const e = document.querySelector('[ws-connect]'); const d = e && "
                           "e['htmx-internal-data']; return d && d.webSocket && d.webSocket.socket.readyState === 1; }")
    noisy = {"store": True, "state": "done", "step_index": 1,
             "result": {"runner": "local", "median_s": 0.0124, "min_s": 0.0036, "max_s": 0.0231,
                        "q1_s": 0.008, "q3_s": 0.017, "verified": True,
                        "baseline": {"median_s": 0.03, "q1_s": 0.0299, "q3_s": 0.0301}}}
    status, _ = http("POST", f"{server.url}/__test__/push/{sid}", noisy)
    assert status == 200
    card = page.locator("#step-results .result-card.noisy")
    expect(card).to_be_visible()
    expect(card.locator(".noisy-flag")).to_have_text("noisy")
    expect(card.locator(".spread")).to_contain_text("IQR 73%")
    jobs_before = page.locator("#jobs li").count()
    card.locator("button.rerun").click()
    expect(page.locator("#jobs li")).to_have_count(jobs_before + 1)
    expect(page.locator("#jobs li").first).to_have_attribute("data-state", "done", timeout=90000)
    shot(page, "editor-noisy-rerun")


def test_a_pushed_result_of_another_step_leaves_the_viewed_card_alone(server, context):
    page = context.new_page()
    sid = new_session(page, server)
    apply_step(page, "j", "split j by 16", 1)
    page.wait_for_function("() => { const e = document.querySelector('[ws-connect]'); const d = e && "
                           "e['htmx-internal-data']; return d && d.webSocket && d.webSocket.socket.readyState === 1; }")
    root = {"store": True, "state": "done", "step_index": 0,
            "result": {"runner": "local", "median_s": 0.0025, "min_s": 0.0024, "max_s": 0.0027}}
    assert http("POST", f"{server.url}/__test__/push/{sid}", root)[0] == 200
    expect(page.locator("#bench-results table.results tbody tr[data-step='0']")).to_have_count(1)
    expect(page.locator("#step-results")).to_have_attribute("data-step", "1")
    expect(page.locator("#step-unmeasured")).to_be_visible()


def test_a_step_with_gpu_binds_is_refused_with_the_reason(server, context):
    server.wait(server.runner_online, 60, "the local runner")
    page = context.new_page()
    page.set_viewport_size(FOLD)
    new_session(page, server)
    apply_step(page, "i", "bind i gpu.block.x", 1)
    note = page.locator("#gpu-binds-note")
    expect(note).to_contain_text("i → gpu.block.x")
    expect(note).to_contain_text("binds do nothing")
    jobs_before = page.locator("#jobs li").count()
    page.select_option("#bench-form select", "local")
    page.click("#bench-btn")
    message = page.locator("#bench-message [role=alert]")
    expect(message).to_contain_text("binds loops to the GPU (i → gpu.block.x)")
    expect(message).to_contain_text("runner local has no GPU")
    expect(page.locator("#jobs li")).to_have_count(jobs_before)
    shot(page, "editor-gpu-binds-refused")

"""Browser tests of what the other flows' files leave out (Playwright, Debian's chromium, the
real server with its real local runner):

* the deferred "legal actions" panel, answered late, never replaces the panel of an IR line
  the player clicked meanwhile;
* the speedup plot and the roofline carry no colour of their own: they follow the theme;
* signup refuses a weak password with the validators' reasons; reloading the tokens page after
  making a token makes no second one;
* the leaderboard lists a schedule measured twice once, names which speedup is which, and the
  export of the measured history keeps its results with their runner;
* the header's API link opens a page for people, not raw JSON.

Screenshots ``dark-theme-plot``, ``leaderboard`` and ``api-docs`` go under
``var/test-artifacts/browser/``.
"""
from __future__ import annotations

import json
import re

import pytest

from browser_support import http, new_matmul, shot, watched_page
from playwright.sync_api import expect

pytestmark = [pytest.mark.xdist_group("browser")]

DARK_SURFACE_2 = "rgb(22, 27, 34)"
LIGHT_SURFACE_2 = "rgb(249, 250, 251)"
DARK_SERIES_0 = "rgb(88, 166, 255)"
LIGHT_SERIES_0 = "rgb(37, 99, 235)"


def wait_for(page, cond, tries=100):
    """Let the page run (Playwright's handlers included) until ``cond()`` holds."""
    while not cond():
        assert tries, "timed out"
        page.wait_for_timeout(50)
        tries -= 1


def test_a_late_deferred_actions_panel_never_replaces_the_one_asked_for(server, context):
    page, errors = watched_page(context)
    new_matmul(page, server)
    held = []
    # hold every answer of the actions panel: the deferred one (``?step=N``) and the clicked
    # line's (``?step=N&at=REF``), to let them come back in the worst order
    pattern = re.compile(r".*/actions\?step=\d+(&at=\w+)?$")
    page.route(pattern, lambda route: held.append(route))
    page.fill("#free-action", "split i by 4")
    page.press("#free-action", "Enter")
    expect(page.locator("#editor")).to_have_attribute("data-step", "1")
    expect(page.locator("#actions")).to_have_attribute("data-deferred", "1")
    wait_for(page, lambda: held)
    assert len(held) == 1 and "at=" not in held[0].request.url, [r.request.url for r in held]
    # the player clicks a loop while that panel is still loading
    page.click("#ir .line[data-ref=j]")
    wait_for(page, lambda: any("at=j" in r.request.url for r in held))
    # the deferred answer comes first (if the page still wants it), the clicked line's after
    for route in sorted(held, key=lambda r: "at=" in r.request.url):
        try:
            route.continue_()
        except Exception:                                   # noqa: BLE001 - aborted by the page
            pass
        page.wait_for_timeout(700)
    page.unroute(pattern)
    expect(page.locator("#actions")).to_have_attribute("data-at", "j")
    expect(page.locator("#actions h2")).to_contain_text("Actions at j")
    expect(page.locator("#ir .line[data-ref=j]")).to_have_class(re.compile(r"\bselected\b"))
    assert not errors, errors


def plot_colours(page):
    return page.evaluate("""() => {
      const svg = document.querySelector('#speedup-plot svg.plot');
      const inline = Array.from(svg.querySelectorAll('[fill^="#"], [stroke^="#"]')).length;
      return {frame: getComputedStyle(svg.querySelector('rect.frame')).fill,
              dot: getComputedStyle(svg.querySelector('circle[data-step]')).fill,
              tick: getComputedStyle(svg.querySelector('text.tick')).fill,
              page: getComputedStyle(document.body).color, inline: inline}; }""")


def test_the_speedup_plot_follows_the_dark_theme(server, browser):
    light = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
    dark = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="dark")
    try:
        page = light.new_page()
        sid = new_matmul(page, server)
        done = {"store": True, "state": "done", "step_index": 0,
                "result": {"runner": "local", "median_s": 0.0025, "min_s": 0.0024, "max_s": 0.0027}}
        assert http("POST", f"{server.url}/__test__/push/{sid}", done)[0] == 200
        page.goto(f"{server.url}/s/{sid}/?step=0")
        expect(page.locator("#speedup-plot svg.plot circle[data-step='0']")).to_have_count(1)
        seen = plot_colours(page)
        assert seen["inline"] == 0 and seen["frame"] == LIGHT_SURFACE_2 and seen["dot"] == LIGHT_SERIES_0
        other = dark.new_page()
        other.goto(f"{server.url}/s/{sid}/?step=0")
        expect(other.locator("#speedup-plot svg.plot")).to_be_visible()
        seen = plot_colours(other)
        assert seen["frame"] == DARK_SURFACE_2 and seen["dot"] == DARK_SERIES_0, seen
        assert seen["tick"] != "rgb(85, 85, 85)"                  # not the old fixed grey
        other.locator("#speedup-plot").scroll_into_view_if_needed()
        shot(other, "dark-theme-plot")
        # the toggle switches the plot too, without a reload
        other.click("#theme-toggle")
        expect(other.locator("html")).to_have_attribute("data-theme", "light")
        assert plot_colours(other)["frame"] == LIGHT_SURFACE_2
    finally:
        light.close()
        dark.close()


def test_signup_refuses_a_weak_password_and_a_token_page_reload_makes_no_second_token(server, context):
    page = context.new_page()
    page.goto(server.url + "/accounts/signup/")
    page.fill("input[name=username]", "auditor")
    page.fill("input[name=password1]", "123")
    page.fill("input[name=password2]", "123")
    page.click("button[type=submit].primary")
    expect(page.locator("main")).to_contain_text("too short")
    expect(page.locator("main")).to_contain_text("entirely numeric")
    assert "/accounts/signup/" in page.url
    page.fill("input[name=password1]", "a-long enough pass 42")
    page.fill("input[name=password2]", "a-long enough pass 42")
    page.click("button[type=submit].primary")
    page.goto(server.url + "/accounts/")
    page.fill("#new-token-form input[name=note]", "ci")
    page.click("#new-token-form button")
    expect(page.locator("#new-token")).to_be_visible()
    tokens = "section:has(h2:text('API tokens')) > ul > li:has(code)"
    expect(page.locator(tokens)).to_have_count(1)
    page.reload()                                              # a GET after the redirect: nothing posted again
    expect(page.locator(tokens)).to_have_count(1)
    expect(page.locator("#new-token")).to_have_count(0)


def test_leaderboard_lists_a_schedule_once_names_its_speedups_and_exports_keep_results(server, context):
    server.wait(server.runner_online, 60, "the local runner")
    page = context.new_page()
    sid = new_matmul(page, server, size=12)
    for k in range(2):                                           # the same program measured twice
        page.select_option("#bench-form select", "local")
        page.click("#bench-btn")
        expect(page.locator("#jobs li[data-state=done]")).to_have_count(k + 1, timeout=60000)
    page.goto(server.url + "/kernels/matmul/")
    board = page.locator("table.leaderboard").filter(has=page.locator(f"a[href='/s/{sid}/?step=0']"))
    expect(board.locator(f"tr:has(a[href='/s/{sid}/?step=0'])")).to_have_count(1)
    expect(board.locator(f"tr:has(a[href='/s/{sid}/?step=0']) td.runs")).to_have_text("2")
    expect(board.locator("th", has_text="vs. fastest untransformed")).to_have_count(1)
    expect(page.locator("#leaderboards")).to_contain_text("not timed together")
    shot(page, "leaderboard")
    # the export of the history keeps its measurements, each with its runner
    page.goto(f"{server.url}/s/{sid}/")
    href = page.locator("#export-link").get_attribute("href")
    exported = json.loads(page.request.get(server.url + href).text())
    results = [r for s in exported["steps"] for r in (s.get("results") or [])]
    assert len(results) >= 2 and all("local" in json.dumps(r) for r in results), exported["steps"]


def test_the_api_link_opens_a_page_for_people(server, context):
    page = context.new_page()
    page.goto(server.url + "/")
    page.click("#api-docs-link")
    page.wait_for_url("**/api/docs")
    expect(page.locator("h1")).to_be_visible()
    expect(page.locator(".api-docs nav.toc")).to_contain_text("/api/sessions")
    assert "text/html" in page.evaluate("document.contentType")
    expect(page.locator("#openapi-json")).to_have_attribute("href", "/api/openapi.json")
    shot(page, "api-docs")

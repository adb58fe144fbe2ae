"""Fixtures of the browser tests: one real server per test module, one chromium per module,
a fresh 1440 x 1000 context per test (tests/browser/browser_support.py has the parts)."""
from __future__ import annotations

import pytest

from browser_support import ARGS, CHROMIUM, require_browser, served, sync_playwright


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from served(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="module")
def browser():
    require_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    ctx.set_default_timeout(15000)
    yield ctx
    ctx.close()

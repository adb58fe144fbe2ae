"""Hostile input never gets a 500 or a traceback, and never holds the server long.

One test per attack: out-of-range literals and deep nesting (located DojoErrors, 400 over
HTTP), sources over the checker's limits or time budget (400 within 5 s), JSON errors on
every /api/ path (unknown paths, odd characters, CSRF failures), DEBUG off by default,
oversized headers (431), write rate limits (429 + Retry-After).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import Client

from dojo_core.errors import DojoError
from dojo_core.parser import parse
from dojo_core.source import load_source

ROOT = Path(__file__).resolve().parents[2]
BASE = "kernel k(N = 4)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = {}\n"
BIG_LITERAL = BASE.format("A[i] * " + "9" * 5000)
LONG_SUM = BASE.format(" + ".join(["A[i]"] * 490))
DEEP_NEG = BASE.format("-" * 490 + "A[i]")
DEEP_CALLS = BASE.format("exp(" * 490 + "A[i]" + ")" * 490)


def located(text) -> DojoError:
    with pytest.raises(DojoError) as exc:
        load_source(text, "k.dojo")
    assert str(exc.value).startswith("k.dojo:"), str(exc.value)
    return exc.value


@pytest.mark.parametrize("text, line, col, words", [
    (BIG_LITERAL, 6, 17, "out of range"),
    (BASE.format("A[i]").replace("N = 4", "N = " + "1" * 5000), 1, 14, "out of range"),
    (BASE.format("1" + "0" * 400 + ".5"), 6, 10, "out of range for a floating-point"),
    (LONG_SUM, 6, None, "nested too deeply"),
    (DEEP_NEG, 6, None, "nested too deeply"),
    (DEEP_CALLS, 6, None, "nested too deeply"),
])
def test_parse_failures_are_located_errors(text, line, col, words):
    err = located(text)
    assert err.line == line and (col is None or err.col == col) and words in err.message


def test_the_deepest_accepted_nesting_goes_through_every_pass():
    from dojo_core.codegen.c import generate_c
    from dojo_core.printer import print_program
    text = BASE.format(" + ".join(["A[i]"] * 190))
    program = load_source(text, "k.dojo")
    assert parse(print_program(program)) == program and "dojo_kernel" in generate_c(program)


@pytest.mark.parametrize("decl, words", [
    ("in A: f32[N, N, N, N, N, N, N, N, N]", "9 dimensions; at most 8"),
    ("temp T: f32[N, 1000000000 * N]", "elements at these sizes; at most"),
])
def test_checker_limits_on_arrays(decl, words):
    text = f"kernel k(N = 4)\n{decl}\nout B: f32[N]\n\nfor i in 0..N:\n  B[i] = 0\n"
    assert words in located(text).message


def test_checker_limits_locals_sizes_and_loop_depth():
    big_local = ("kernel k(N = 4)\nout B: f32[N]\n\nfor i in 0..N:\n"
                 "  local t: f32[1000000000] in stack\n  t[0] = 1\n  B[i] = t[0]\n")
    assert "local buffer 't' has 1000000000 elements" in located(big_local).message
    assert "at most 16777216" in located(BASE.format("A[i]").replace("N = 4", "N = 1000000000000")).message
    its = [f"i{k}" for k in range(40)]
    nest = "".join("  " * d + f"for {it} in 0..2:\n" for d, it in enumerate(its))
    deep = "kernel k(N = 4)\nout B: f32[N]\n\n" + nest + "  " * 40 + "B[0] = 1\n"
    assert "nested more than 32 deep" in located(deep).message


def costly_source(limit=60_000) -> str:
    """A source within every structural limit whose exact checks take far over the budget."""
    its = [f"i{k}" for k in range(8)]
    dims = ", ".join(["N"] * 8)
    text = "kernel k(N = 8)\n" + "".join(f"in A{a}: f32[{dims}]\n" for a in range(4))
    text += f"out B: f32[{dims}]\n\n" + "".join("  " * d + f"for {it} in 0..2:\n" for d, it in enumerate(its))
    k = 0
    while len(text) < limit:
        idx = ", ".join(" + ".join(its[(j * 3 + m + k) % 8] for m in range(3)) for j in range(8))
        text += "  " * 8 + f"B[{idx}] += A{k % 4}[{idx}] * A{(k + 1) % 4}[{idx}]\n"
        k += 1
    return text


@pytest.mark.django_db
def test_a_source_over_the_budget_is_refused_within_5_s(client):
    t = time.monotonic()
    r = client.post("/api/sessions", json.dumps({"source": costly_source()}), content_type="application/json")
    took = time.monotonic() - t
    assert r.status_code == 400 and "longer than its budget" in r.json()["error"], r.content
    assert took < 5.0, took
    assert r.json()["error"].startswith("<source>:")


@pytest.mark.django_db
@pytest.mark.parametrize("source", [BIG_LITERAL, LONG_SUM, DEEP_NEG])
def test_hostile_sources_get_400_on_sessions_and_jobs(client, source):
    r = client.post("/api/sessions", json.dumps({"source": source}), content_type="application/json")
    assert r.status_code == 400 and r.json()["error"].startswith("<source>:6:"), r.content
    made = client.post("/api/sessions", json.dumps({"kernel": "relu"}), content_type="application/json").json()
    r = client.post("/api/jobs", json.dumps({"source": source}), content_type="application/json",
                    HTTP_AUTHORIZATION=f"Token {made['owner_token']}")
    assert r.status_code == 400 and r.json()["error"].startswith("<source>:6:"), r.content


@pytest.mark.django_db
def test_size_rules_are_the_same_for_sessions_and_jobs(client):
    r = client.post("/api/sessions", json.dumps({"kernel": "relu", "sizes": {"N": 10 ** 12}}),
                    content_type="application/json")
    assert r.status_code == 400 and "16777216" in r.json()["error"], r.content
    made = client.post("/api/sessions", json.dumps({"kernel": "relu"}), content_type="application/json").json()
    r = client.post("/api/jobs", json.dumps({"kernel": "relu", "sizes": {"N": 10 ** 12}}),
                    content_type="application/json", HTTP_AUTHORIZATION=f"Token {made['owner_token']}")
    assert r.status_code == 400 and "16777216" in r.json()["error"], r.content


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, status", [
    ("POST", "/api/no/such/thing", 404),
    ("GET", "/api/kernels/b%0A/leaderboard", 404),
    ("GET", "/api", 404),
    ("POST", "/api/library", 403),                       # CSRF: a cookie and no token
    ("PUT", "/api/sessions", 405),
])
def test_every_api_error_is_json(method, path, status):
    browser = Client(enforce_csrf_checks=True)
    browser.cookies["sessionid"] = "x"
    if method == "GET":
        r = browser.get(path)
    else:
        r = getattr(browser, method.lower())(path, "{}", content_type="text/plain")
    assert r.status_code == status, (r.status_code, r.content[:200])
    assert r["Content-Type"].startswith("application/json") and "error" in r.json()


def test_debug_is_off_unless_the_developer_flag_is_set(tmp_path):
    code = "import django, os; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"}
    env.update(DJANGO_SETTINGS_MODULE="webapp.settings", DOJO_STATE_DIR=str(tmp_path))
    run = lambda extra: subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, **extra},
                                       capture_output=True, text=True, check=True).stdout.strip()
    assert run({}) == "False" and run({"DJANGO_DEBUG": "1"}) == "True"
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0      # a key of its own, private


@pytest.mark.django_db
def test_oversized_headers_get_431(client):
    r = client.get("/api/runners", HTTP_AUTHORIZATION="Token " + "x" * 100_000)
    assert r.status_code == 431 and "too large" in r.json()["error"]
    assert client.get("/api/runners", HTTP_AUTHORIZATION="Token " + "x" * 1000).status_code == 200


@pytest.mark.django_db
def test_writes_are_rate_limited_with_retry_after(client, settings):
    settings.DOJO_RATE_WRITES_PER_MIN = 3
    body = json.dumps({"kernel": "relu"})
    codes = [client.post("/api/sessions", body, content_type="application/json").status_code for _ in range(4)]
    assert codes[:3] == [201, 201, 201] and codes[3] == 429
    r = client.post("/api/sessions", body, content_type="application/json")
    assert 1 <= int(r["Retry-After"]) <= 60 and "too many requests" in r.json()["error"]
    assert client.get("/api/kernels").status_code == 200                   # reads go on
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert other.post("/api/sessions", body, content_type="application/json").status_code == 201

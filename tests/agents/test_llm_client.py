"""The LLM agent client (dojo_core/agents/llm_client.py).

No LLM exists here, so the chat endpoint is FAKE: a threading http.server (the json_endpoint
fixture of tests/agents/conftest.py) that speaks the OpenAI /chat/completions protocol and
replays scripted answers (it records every request so the tests can read what the model
was told).  Everything else
is real: answer parsing, the retry of illegal answers, the walk, the local evaluator
(gcc), and, for the command line and the "llm" web agent run, a real PerfDojo server
process with its local runner and agents worker.
"""
from __future__ import annotations

import json
import subprocess
import sys
from http.server import ThreadingHTTPServer

import pytest

from dojo_core import kernels
from dojo_core.agents.llm_client import (STOP, ChatEndpoint, ChatError, LLMAgent, LLMPolicy,
                                         build_prompt, parse_choice)

ACTIONS = ["split i by 2", "split i by 4", "split j by 4", "interchange i j", "vectorize k",
           "stage A at i as At", "stage A at i as At in register"]


class FakeChatEndpoint:
    """A scripted OpenAI-compatible endpoint (a stand-in for a real LLM: none exists here).
    ``answers`` are replayed in order; a callable answer gets the request body."""

    def __init__(self, answers, status, serve):
        self.answers, self.status = list(answers), status
        self.requests: list = []
        self.url = serve(self.respond, ThreadingHTTPServer)

    def respond(self, path, body, authorization):
        self.requests.append({"path": path, "body": body, "authorization": authorization})
        answer = self.answers.pop(0) if self.answers else "ACTION: STOP"
        answer = answer(body) if callable(answer) else answer
        return self.status, {"id": "x", "object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": answer}}]}


@pytest.fixture
def fake(json_endpoint):
    """``fake(answers, status=200)``: a FakeChatEndpoint served until the test ends."""
    def make(answers, status=200):
        return FakeChatEndpoint(answers, status, json_endpoint)
    return make


@pytest.mark.parametrize("answer, expected", [
    ("ACTION: vectorize k", "vectorize k"),
    ("I would vectorize.\nAction:  `split  j by 4`.", "split j by 4"),
    ('{"action": "interchange i j", "why": "locality"}', "interchange i j"),
    ("ACTION: 2", "split i by 4"),
    ("3. split j by 4", "split j by 4"),
    ("Staging helps: stage A at i as At in register should keep A close.", "stage A at i as At in register"),
    ("ACTION: STOP", STOP),
    ("split i by 3", None),
    ("ACTION: 99", None),
    ("make it faster", None),
])
def test_parse_choice_finds_the_legal_action_an_answer_names(answer, expected):
    assert parse_choice(answer, ACTIONS) == expected


def test_prompt_shows_ir_actions_and_measurements():
    text = build_prompt("kernel k(N = 4)\n", ACTIONS, [
        {"steps": [], "median_s": 2e-3, "error": None},
        {"steps": ["split i by 4"], "median_s": 1e-3, "error": None},
        {"steps": ["vectorize k"], "median_s": None, "error": "compile error"}], 5, max_actions=3)
    assert "kernel k(N = 4)" in text and "1. split i by 2" in text and "3. split j by 4" in text
    assert "interchange i j" not in text and "the first 3 shown" in text
    assert "split i by 4: 1.0000 ms, 2.00x" in text and "vectorize k: failed (compile error)" in text
    assert "5 measurement(s) left" in text


def test_an_illegal_answer_is_told_back_and_retried_within_the_bound(fake):
    ep = fake(["Let me tile everything.", "ACTION: split i by 9", "ACTION: vectorize k"])
    policy = LLMPolicy(ChatEndpoint(ep.url, "m-1", api_key="sk-test"), retries=3)
    assert policy.choose("kernel k()\n", ACTIONS, [], 3) == "vectorize k"
    assert len(ep.requests) == 3 and policy.refusals == 2
    third = ep.requests[2]
    assert third["path"] == "/v1/chat/completions" and third["authorization"] == "Bearer sk-test"
    assert third["body"]["model"] == "m-1"
    told = [m["content"] for m in third["body"]["messages"] if m["role"] == "user"]
    assert "'ACTION: split i by 9' is not one of the legal actions" in told[-1]
    assert [m["role"] for m in third["body"]["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]

    ep = fake(["no idea"] * 10)
    policy = LLMPolicy(ChatEndpoint(ep.url, "m"), retries=2)
    assert policy.choose("kernel k()\n", ACTIONS, [], 3) is None
    assert len(ep.requests) == 3 and "no legal action in 3 answers" in policy.last_reason
    assert ep.requests[0]["authorization"] is None                  # the key is optional


def test_endpoint_errors_are_chat_errors(fake):
    ep = fake(["x"], status=500)
    with pytest.raises(ChatError, match="HTTP 500"):
        ChatEndpoint(ep.url, "m").complete([{"role": "user", "content": "hi"}])
    with pytest.raises(ChatError):
        ChatEndpoint("http://127.0.0.1:9/v1", "m", timeout=2).complete([])


def test_llm_agent_searches_with_a_real_local_evaluator(fake, tmp_path, monkeypatch):
    from dojo_core.agents.evaluators import LocalEvaluator
    from dojo_core.records import RecordStore
    monkeypatch.setenv("DOJO_CACHE_DIR", str(tmp_path / "cache"))
    # both answers are legal whichever state is the best so far (timings decide that)
    ep = fake(["ACTION: split j by 4", "ACTION: split k by 2", "ACTION: STOP"])
    agent = LLMAgent(endpoint=ep.url, model="m")
    root = kernels.load_kernel("matmul", {"N": 8, "M": 8, "K": 8})
    events = []
    evaluator = LocalEvaluator(min_time=0.01, store=RecordStore(tmp_path / "m.jsonl"))
    try:
        result = agent.search(root, evaluator, 3, on_event=events.append)
    finally:
        evaluator.close()
    steps = [t.steps for t in result.trials]
    assert steps[0] == () and steps[1] == ("split j by 4",) and len(steps) == 3 == len(events)
    assert steps[2][-1] == "split k by 2"
    assert all(t.measurement.ok for t in result.trials), result.trials
    assert [e.index for e in events] == [0, 1, 2]
    assert len(ep.requests) == 2                   # the budget ends the walk, not STOP
    history = result.to_history()
    assert history["steps"][1]["text"] == "split j by 4"


def http(method, url, data, token):
    import urllib.error
    import urllib.request
    req = urllib.request.Request(url, data=json.dumps(data).encode(), method=method, headers={
        "Content-Type": "application/json", "Authorization": f"Token {token}"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_command_line_and_web_run_drive_a_real_server(fake, tmp_path):
    from live_server import ROOT, Server
    ep = fake(["I'd like to tile it all.", "ACTION: split i by 4", '{"action": "split j by 2"}'])
    web = fake(["ACTION: split k by 2", "ACTION: STOP"])           # for the "llm" agent of the web
    server = Server(tmp_path, env={"DOJO_LLM_ENDPOINT": web.url, "DOJO_LLM_MODEL": "web-model"})
    try:
        server.wait_online("local")
        proc = subprocess.run(
            [sys.executable, "-m", "dojo_core.agents.llm_client", "--server", server.url, "--endpoint", ep.url,
             "--model", "fake-model", "--api-key", "k-test", "--kernel", "matmul", "--budget", "3",
             "--size", "N=8", "--size", "M=8", "--size", "K=8", "--min-time", "0.01"],
            cwd=ROOT, env=server.env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr + server.logs()
        summary = json.loads(proc.stdout)
        assert summary["measurements"] == 3 and summary["refused_answers"] == 1
        assert summary["baseline_median_s"] > 0 and summary["best_median_s"] > 0
        status, history = server.get(f"/api/sessions/{summary['session']}")
        assert status == 200
        texts = {st["text"] for st in history["steps"]}
        assert {"", "split i by 4", "split j by 2"} <= texts and len(history["steps"]) == 3
        jobs = [j for st in history["steps"] for j in st["results"]]
        assert len(jobs) == 3 and all(j["state"] == "done" and j["result"]["verified"] for j in jobs)
        assert [r["body"]["model"] for r in ep.requests] == ["fake-model"] * 3
        assert all(r["authorization"] == "Bearer k-test" for r in ep.requests)
        assert "kernel matmul(N = 8" in ep.requests[0]["body"]["messages"][1]["content"]
        status, _ = server.post(f"/api/sessions/{summary['session']}/steps", {"action": "split k by 2"})
        assert status == 403                     # an ordinary session: only its owner token extends it

        # the same agent started as a web agent run (the agents worker reads DOJO_LLM_ENDPOINT)
        status, created = server.post("/api/sessions", {"kernel": "matmul", "sizes": {"N": 8, "M": 8, "K": 8}})
        sid = created["id"]
        status, body = http("POST", f"{server.url}/api/sessions/{sid}/agents",
                            {"agent": "llm", "budget": 5, "options": {"min_time": 0.01}},
                            token=created["owner_token"])
        assert status == 202, body
        server.wait(lambda: server.get(f"/api/agents/{body['run']}")[1]["final"], 120, "the llm run")
        run = server.get(f"/api/agents/{body['run']}")[1]
        assert run["state"] == "done" and run["measured"] == 2, run      # the model said STOP
        texts = [st["text"] for st in server.get(f"/api/sessions/{sid}")[1]["steps"]]
        assert texts == ["", "split k by 2"]
        assert [r["body"]["model"] for r in web.requests] == ["web-model"] * 2
    finally:
        server.stop()

    bad = subprocess.run([sys.executable, "-m", "dojo_core.agents.llm_client", "--server", "http://127.0.0.1:9",
                          "--endpoint", ep.url, "--model", "m", "--kernel", "matmul", "--budget", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.startswith("llm_client: POST /api/sessions:") and "Traceback" not in bad.stderr

"""An LLM agent for OpenAI-compatible chat endpoints (issue 7).

The model plays the game one move at a time: it is shown the IR of the best state found
so far, its legal actions (numbered) and every measurement so far, and answers with one
action (or STOP).  Its answer is parsed leniently (a JSON ``{"action": ...}``, an
``ACTION:`` line, a list number, or the action's text anywhere in the answer); an answer
that names no legal action is told back to the model and asked again, at most
``retries`` times, after which the walk ends.  The chosen state is measured; the next
move starts from the best state again.

Two ways to play, with the same policy (``LLMPolicy``) and walk (``walk``):

* ``LLMAgent`` keeps the ``Agent`` contract (agents/base.py): legal actions from
  ``dojo_core.transforms``, measurements from any evaluator (so the web's agent runs and
  ``search --agent llm`` use it);
* ``drive_api`` plays through PerfDojo's HTTP API only (create or take a session, read
  its actions, post steps, benchmark them on a runner, read the jobs), so its history is
  an ordinary session; it writes nothing else.  Command line::

    python -m dojo_core.agents.llm_client --server URL --endpoint URL --model M \\
        --kernel NAME --budget N [--session ID --token T] [--runner R] [--api-key K]

The endpoint is a base URL such as ``http://host:8000/v1`` (``/chat/completions`` is
added) or the full completions URL; the API key is optional (``$OPENAI_API_KEY``).
Only the standard library is used.  Defaults come from DOJO_LLM_ENDPOINT, DOJO_LLM_MODEL,
DOJO_LLM_API_KEY.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from typing import Callable, Optional

from ..errors import Unlocated
from .base import Agent, Measurement, SearchEvent, SearchResult, Trial

STOP = "STOP"
SYSTEM_PROMPT = (
    "You optimize a loop kernel written in the Dojo IR by applying one checked transformation "
    "at a time; every listed action is legal and keeps the program's meaning.  Each state you "
    "choose is compiled and timed; lower time is better.  Answer with exactly one action text "
    "copied from the list (or its number), on a line of its own as: ACTION: <text>.  "
    "Answer ACTION: STOP when nothing is likely to help.")


class ChatError(Unlocated):
    """The endpoint could not be reached or gave no usable answer."""


def _http_json(url: str, payload: Optional[dict], headers: dict, timeout: float, method: str = "POST"):
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"error": f"HTTP {exc.code}"}


class ChatEndpoint:
    """``complete(messages) -> text`` against an OpenAI-compatible /chat/completions."""

    def __init__(self, url: str, model: str, api_key: Optional[str] = None, timeout: float = 120,
                 temperature: float = 0.0):
        url = url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        self.model, self.api_key, self.timeout, self.temperature = model, api_key, timeout, temperature

    def complete(self, messages: list) -> str:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "messages": messages, "temperature": self.temperature}
        try:
            status, body = _http_json(self.url, payload, headers, self.timeout)
        except (OSError, ValueError) as exc:
            raise ChatError(f"{self.url}: {exc}") from None
        if status != 200:
            raise ChatError(f"{self.url}: HTTP {status}: {str(body.get('error', body))[:300]}")
        try:
            return str(body["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError):
            raise ChatError(f"{self.url}: no choices[0].message.content in the answer") from None


# ============================================================================ prompt and answer

def _norm(text: str) -> str:
    return " ".join(text.replace("`", " ").replace('"', " ").split()).strip(" .;:,").lower()


def parse_choice(answer: str, actions: list) -> Optional[str]:
    """The legal action (or STOP) an answer names, or None.  Tried in order: a JSON object
    with "action", an ``ACTION:`` line, a bare line, a list number, the longest action text
    found in the answer on word boundaries."""
    by_norm = {_norm(a): a for a in actions}
    candidates = []
    for m in re.finditer(r"\{[^{}]*\}", answer):
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("action"), (str, int)):
            candidates.append(str(obj["action"]))
    candidates += re.findall(r"(?im)^\W*action\s*[:=]\s*(.+?)\s*$", answer)
    candidates += [line for line in answer.splitlines() if line.strip()]
    for cand in candidates:
        n = _norm(re.sub(r"^\s*(?:\d+[.)]|#\d+:?|[-*])\s+", "", cand))
        if n == "stop":
            return STOP
        if n in by_norm:
            return by_norm[n]
        number = re.fullmatch(r"#?(\d{1,5})", n)
        if number and 1 <= int(number.group(1)) <= len(actions):
            return actions[int(number.group(1)) - 1]
    text = " " + _norm(answer) + " "
    found = [a for a in actions if f" {_norm(a)} " in text]
    return max(found, key=len) if found else None


def build_prompt(ir_text: str, actions: list, trials: list, budget_left: int, max_actions: int) -> str:
    lines = [f"Current state (the best so far):\n```\n{ir_text.rstrip()}\n```", "", "Measurements so far:"]
    base = next((t["median_s"] for t in trials if not t["steps"] and t["median_s"]), None)
    for t in trials[-30:]:
        path = " ; ".join(t["steps"]) or "(the untransformed kernel)"
        if t["median_s"]:
            speed = f", {base / t['median_s']:.2f}x" if base else ""
            lines.append(f"- {path}: {t['median_s'] * 1e3:.4f} ms{speed}")
        else:
            lines.append(f"- {path}: failed ({t.get('error') or 'no time'})")
    shown = actions[:max_actions]
    lines += ["", f"Legal actions here ({len(actions)}"
              + (f", the first {len(shown)} shown" if len(shown) < len(actions) else "") + "):"]
    lines += [f"{i}. {a}" for i, a in enumerate(shown, start=1)]
    lines += ["", f"{budget_left} measurement(s) left.  Which action next?  Answer: ACTION: <text>"]
    return "\n".join(lines)


class LLMPolicy:
    """Chooses the next action with a chat model, retrying answers that are not legal."""

    def __init__(self, chat, retries: int = 3, max_actions: int = 300):
        self.chat, self.retries, self.max_actions = chat, retries, max_actions
        self.refusals = 0                     # answers that named no legal action
        self.last_reason = ""

    def choose(self, ir_text: str, actions: list, trials: list, budget_left: int, note: str = "") -> Optional[str]:
        """A legal action, or None to stop (the model said STOP, or gave no legal action
        within the retries: ``last_reason`` says which)."""
        if not actions:
            self.last_reason = "no legal action"
            return None
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": build_prompt(ir_text, actions, trials, budget_left,
                                                             self.max_actions) + (f"\n{note}" if note else "")}]
        for _ in range(self.retries + 1):
            answer = self.chat.complete(messages)
            choice = parse_choice(answer, actions)
            if choice == STOP:
                self.last_reason = "the model chose STOP"
                return None
            if choice is not None:
                return choice
            self.refusals += 1
            messages += [{"role": "assistant", "content": answer},
                         {"role": "user", "content": f"{answer.strip()[:200]!r} is not one of the legal actions. "
                                                     "Answer with one action text copied exactly from the list "
                                                     "(or its number): ACTION: <text>"}]
        self.last_reason = f"no legal action in {self.retries + 1} answers"
        return None


# ============================================================================ the walk

def walk(legal: Callable, ir_of: Callable, measure: Callable, policy: LLMPolicy, budget: int,
         should_stop: Optional[Callable] = None, on_trial: Optional[Callable] = None) -> tuple:
    """(trials, stopped): measure the root, then ask for one move from the best state per
    measurement.  ``legal(steps) -> [text]``, ``ir_of(steps) -> str``,
    ``measure(steps) -> Measurement``.  A state measured before is not measured again; the
    model asked again (at most ``budget`` such repeats; they cost no measurement).  An
    endpoint failure ends the walk with what was measured (``policy.last_reason``)."""
    trials: list = []
    seen = {}
    stopped = False
    repeats = 0
    note = ""

    def record(steps, m):
        trials.append({"steps": list(steps), "median_s": m.median_s if m.ok else None, "error": m.error})
        seen[steps] = m
        if on_trial is not None:
            on_trial(steps, m)

    record((), measure(()))
    while len(seen) < budget and repeats <= budget:
        if should_stop is not None and should_stop():
            stopped = True
            break
        best = min((s for s in seen if seen[s].ok), key=lambda s: (seen[s].median_s, len(s)), default=())
        try:
            choice = policy.choose(ir_of(best), legal(best), trials, budget - len(seen), note)
        except ChatError as exc:
            policy.last_reason = f"the endpoint failed: {exc}"
            break
        if choice is None:
            break
        steps = best + (choice,)
        if steps in seen:
            repeats += 1
            note = f"'{choice}' from this state was measured already: choose a different action."
            continue
        note = ""
        record(steps, measure(steps))
    return trials, stopped


class LLMAgent(Agent):
    """The LLM walk under the Agent contract (registered as "llm")."""
    name = "llm"

    def __init__(self, endpoint: Optional[str] = None, model: Optional[str] = None,
                 api_key: Optional[str] = None, retries: int = 3, chat=None):
        if chat is None:
            endpoint = endpoint or os.environ.get("DOJO_LLM_ENDPOINT")
            if not endpoint:
                raise ValueError("the llm agent needs an endpoint (endpoint= or DOJO_LLM_ENDPOINT)")
            chat = ChatEndpoint(endpoint, model or os.environ.get("DOJO_LLM_MODEL", "default"),
                                api_key or os.environ.get("DOJO_LLM_API_KEY") or None)
        self.policy = LLMPolicy(chat, retries=retries)

    def search(self, root, evaluator, budget, *, seed=0, on_event=None, should_stop=None) -> SearchResult:
        from ..printer import print_program
        from ..transforms import actions, apply_step
        start = time.monotonic()
        programs = {(): root}
        result = SearchResult(agent=self.name, kernel=root.name, root=root)

        def program(steps):
            if steps not in programs:
                programs[steps] = apply_step(program(steps[:-1]), steps[-1])
            return programs[steps]

        def on_trial(steps, m):
            result.trials.append(Trial(tuple(steps), m))
            if on_event is not None:
                on_event(SearchEvent(self.name, len(result.trials) - 1, result.trials[-1], result.best, budget))

        _, result.stopped = walk(lambda s: [a.text for a in actions(program(s))],
                                 lambda s: print_program(program(s)),
                                 lambda s: evaluator.evaluate(root, s), self.policy, budget,
                                 should_stop, on_trial)
        result.wall_s = time.monotonic() - start
        return result


# ============================================================================ over the HTTP API

class ApiError(Unlocated):
    """The PerfDojo server could not be reached or refused a call; str() says why."""


class PerfDojoAPI:
    """The few calls of PerfDojo's JSON API the walk needs (standard library HTTP)."""

    def __init__(self, server: str, token: Optional[str] = None, timeout: float = 30):
        self.server, self.token, self.timeout = server.rstrip("/"), token, timeout

    def call(self, method: str, path: str, payload: Optional[dict] = None) -> dict:
        headers = {"Authorization": f"Token {self.token}"} if self.token else {}
        try:
            status, body = _http_json(self.server + path, payload, headers, self.timeout, method)
        except (OSError, ValueError) as exc:
            raise ApiError(f"{method} {path}: {exc}") from None
        if status >= 400:
            raise ApiError(f"{method} {path}: HTTP {status}: {body.get('error', body)}")
        return body

    def create_session(self, kernel: str, sizes: Optional[dict] = None) -> str:
        body = self.call("POST", "/api/sessions", {"kernel": kernel, **({"sizes": sizes} if sizes else {})})
        self.token = self.token or body.get("owner_token")
        return body["id"]

    def wait_job(self, job_id: int, poll_s: float = 0.3, timeout: float = 900) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            job = self.call("GET", f"/api/jobs/{job_id}")
            if job.get("final") or job.get("state") in ("done", "failed", "lost", "cancelled"):
                return job
            if time.monotonic() > deadline:
                return {"state": "failed", "error": f"job {job_id} not finished after {timeout:g} s"}
            time.sleep(poll_s)


def drive_api(api: PerfDojoAPI, policy: LLMPolicy, budget: int, kernel: Optional[str] = None,
              session: Optional[str] = None, start_step: int = 0, runner: Optional[str] = None,
              options: Optional[dict] = None, sizes: Optional[dict] = None) -> dict:
    """Play through the API; the summary (session, best step, times, every measurement)."""
    sid = session or api.create_session(kernel, sizes)
    index_of = {(): start_step}
    ir_cache = {}

    def step_of(steps):
        if steps not in index_of:
            body = api.call("POST", f"/api/sessions/{sid}/steps", {"parent": step_of(steps[:-1]), "action": steps[-1]})
            index_of[steps] = body["index"]
            ir_cache[steps] = body["ir"]
        return index_of[steps]

    def ir_of(steps):
        if steps not in ir_cache:
            ir_cache[steps] = api.call("GET", f"/api/sessions/{sid}/steps/{step_of(steps)}")["ir"]
        return ir_cache[steps]

    def legal(steps):
        return [a["text"] for a in api.call("GET", f"/api/sessions/{sid}/actions?step={step_of(steps)}")["actions"]]

    def measure(steps):
        payload = {"runner": runner, **({"options": options} if options else {})}
        try:
            job_id = api.call("POST", f"/api/sessions/{sid}/steps/{step_of(steps)}/benchmark", payload)["job"]
        except ApiError as exc:
            return Measurement(None, verified=False, error=str(exc))
        job = api.wait_job(job_id)
        res = job.get("result") or {}
        ok = job.get("state") == "done" and res.get("verified") is True and res.get("median_s")
        return Measurement(res.get("median_s") if ok else None, verified=bool(res.get("verified")),
                           error=None if ok else (job.get("error") or job.get("state")),
                           min_s=res.get("min_s"), max_s=res.get("max_s"), runner=job.get("runner") or "any")

    trials, _ = walk(legal, ir_of, measure, policy, budget)
    measured = [t for t in trials if t["median_s"]]
    best = min(measured, key=lambda t: (t["median_s"], len(t["steps"])), default=trials[0])
    base = trials[0]["median_s"]
    return {"session": sid, "url": f"/s/{sid}/", "owner_token": api.token,
            "best_step": index_of[tuple(best["steps"])], "best_steps": best["steps"],
            "best_median_s": best["median_s"], "baseline_median_s": base,
            "speedup": base / best["median_s"] if base and best["median_s"] else None,
            "measurements": len(trials), "refused_answers": policy.refusals,
            "ended": policy.last_reason or "budget", "trials": trials}


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m dojo_core.agents.llm_client",
                                description="Optimize a kernel with an LLM through PerfDojo's HTTP API.")
    p.add_argument("--server", required=True, help="PerfDojo server, e.g. http://127.0.0.1:8000")
    p.add_argument("--endpoint", default=os.environ.get("DOJO_LLM_ENDPOINT"), help="OpenAI-compatible base URL")
    p.add_argument("--model", default=os.environ.get("DOJO_LLM_MODEL"))
    p.add_argument("--api-key", default=os.environ.get("DOJO_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY"))
    p.add_argument("--kernel", help="library kernel of a new session")
    p.add_argument("--session", help="extend this session instead (needs --token)")
    p.add_argument("--step", type=int, default=0, help="start step of --session")
    p.add_argument("--token", help="API token (pdk_...) or owner token (pdo_...)")
    p.add_argument("--budget", type=int, required=True, help="measurements, the baseline included")
    p.add_argument("--runner", help="runner name or label (default: any online runner)")
    p.add_argument("--min-time", type=float, help="benchmark min_time per measurement (s)")
    p.add_argument("--size", action="append", default=[], metavar="N=V")
    p.add_argument("--retries", type=int, default=3)
    args = p.parse_args(argv)
    if not args.endpoint or not args.model:
        p.error("--endpoint and --model are required (or DOJO_LLM_ENDPOINT, DOJO_LLM_MODEL)")
    if bool(args.kernel) == bool(args.session):
        p.error("give exactly one of --kernel or --session")
    if args.budget < 1:
        p.error("--budget must be at least 1")
    try:
        sizes = {k: int(v) for k, _, v in (s.partition("=") for s in args.size)}
    except ValueError:
        p.error("--size takes NAME=INTEGER")
    policy = LLMPolicy(ChatEndpoint(args.endpoint, args.model, args.api_key), retries=args.retries)
    api = PerfDojoAPI(args.server, args.token)
    try:
        summary = drive_api(api, policy, args.budget, kernel=args.kernel, session=args.session,
                            start_step=args.step, runner=args.runner, sizes=sizes or None,
                            options={"min_time": args.min_time} if args.min_time else None)
    except (ApiError, ChatError) as exc:
        print(f"llm_client: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

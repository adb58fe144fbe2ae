"""Evaluating program states through the web app's job API.

``ServerEvaluator(url, runners=(None,), min_time=0.05, poll_s=0.2, timeout=600, token=None)``
    submits ``POST /api/jobs`` and polls ``GET /api/jobs/ID`` (standard library HTTP only);
    ``evaluate_many`` spreads the candidates over the named runners in parallel, one thread
    per runner (give runners of the same hardware: their timings are compared).  HTTP and
    job failures are Measurements with ``error``, never exceptions.
"""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

from .. import ir
from ..errors import DojoError
from ..printer import print_program
from ..records import RecordStore, program_hash, text_hash
from ..replay_cache import SHARED
from .base import Measurement
from .measurement_cache import (MeasurementCache, failed_measurement, measurement_record,
                                one_line)


class ServerEvaluator:
    """Measure through the web app's job API on one or more runners (module docstring)."""

    FINAL = ("done", "failed", "lost", "cancelled")

    def __init__(self, url: str, runners: Sequence = (None,), min_time: float = 0.05,
                 poll_s: float = 0.2, timeout: float = 600, token: Optional[str] = None,
                 store: Optional[RecordStore] = None, kernel: Optional[str] = None):
        self.url = url.rstrip("/")
        self.runners = list(runners) or [None]
        self.min_time, self.poll_s, self.timeout, self.token = min_time, poll_s, timeout, token
        self.kernel = kernel
        self.fingerprint = "server:" + text_hash(
            self.url + "|" + ",".join(str(r) for r in self.runners))[:16]
        self.cache = MeasurementCache(store, self.fingerprint)
        self.states = SHARED

    def _http(self, method: str, path: str, payload=None) -> tuple:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                answer = json.loads(exc.read() or b"{}")
            except ValueError:
                answer = {}
            return exc.code, answer if isinstance(answer, dict) else {}

    def evaluate(self, program: ir.Program, steps: tuple = (), runner=None) -> Measurement:
        runner = runner if runner is not None else self.runners[0]
        label = runner or "any"
        try:
            state_hash = program_hash(self.states.program(program, tuple(steps)))
        except DojoError as exc:
            return failed_measurement(f"illegal step: {exc.message}", label)
        hit = self.cache.lookup(state_hash)
        if hit is not None:
            return hit
        try:
            m = self._submit_and_wait(program, steps, runner, label)
        except (OSError, ValueError, urllib.error.URLError) as exc:
            return failed_measurement(f"server: {one_line(exc)}", label)   # transient: not cached
        if m.error is None or m.median_s is not None or not m.error.startswith("server:"):
            self.cache.add(measurement_record(program, steps, state_hash, m))
        return m

    def _submit_and_wait(self, program, steps, runner, label) -> Measurement:
        payload = {"source": print_program(program), "steps": list(steps),
                   "sizes": dict(program.size_values),
                   "options": {"min_time": self.min_time}}
        if self.kernel:
            payload["kernel"] = self.kernel
        if runner:
            payload["runner"] = runner
        status, answer = self._http("POST", "/api/jobs", payload)
        if status != 201:
            return failed_measurement(f"server: HTTP {status}: {answer.get('error', '')}", label)
        job_id, deadline = answer["job"], time.monotonic() + self.timeout
        while answer.get("state") not in self.FINAL:
            if time.monotonic() > deadline:
                self._http("POST", f"/api/jobs/{job_id}/cancel", {})
                return failed_measurement(
                    f"server: job {job_id} timed out after {self.timeout:g} s", label)
            time.sleep(self.poll_s)
            status, answer = self._http("GET", f"/api/jobs/{job_id}")
            if status != 200:
                return failed_measurement(
                    f"server: HTTP {status}: {answer.get('error', '')}", label)
        result = answer.get("result") or {}
        who = answer.get("runner") or label
        if answer["state"] != "done":
            return failed_measurement(
                result.get("error") or answer.get("error") or answer["state"], who,
                verified=bool(result.get("verified", True)))
        if not result.get("verified", False):
            return failed_measurement(
                result.get("error") or "outputs differ from the untransformed kernel", who,
                verified=False)
        return Measurement(result.get("median_s"), True, result.get("error"),
                           result.get("min_s"), result.get("max_s"), runner=who)

    def evaluate_many(self, items: Sequence[tuple]) -> list:
        items = list(items)
        if len(self.runners) <= 1 or len(items) <= 1:
            return [self.evaluate(p, s) for p, s in items]
        results = [None] * len(items)
        cursor = iter(range(len(items)))
        lock = threading.Lock()

        def drain(runner):
            while True:
                with lock:
                    i = next(cursor, None)
                if i is None:
                    return
                results[i] = self.evaluate(items[i][0], items[i][1], runner=runner)

        with ThreadPoolExecutor(len(self.runners)) as pool:
            list(pool.map(drain, self.runners))
        return results

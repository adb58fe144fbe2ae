"""The thin HTTP client of ``library build --server URL`` (standard library only).

* ``fetch_records(server)`` -> (records, runners): ``GET /api/library/records``, the
  verified measurements of every runner in the records.py format, and the runners
  (name, labels, fingerprint) as select.RunnerInfo.
* ``replay_on_runner(server, runner, records, fingerprints)``: for a runner without
  measurements, submits one benchmark job (``POST /api/jobs``) per best step sequence of the
  other machines, plus the untransformed kernel, per (kernel, sizes), and waits until they
  are final (``GET /api/jobs/ID``); returns the job dicts.

``$DOJO_API_TOKEN`` (a ``pdk_...`` user token), when set, is sent as
``Authorization: Token ...``.  Every failure is a LibraryError with the server's reason.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

from .select import LibraryError, RunnerInfo, candidates, fingerprints_with_records


def _request(server: str, path: str, payload=None, timeout: float = 60):
    url = server.rstrip("/") + path
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    token = os.environ.get("DOJO_API_TOKEN")
    if token:
        req.add_header("Authorization", f"Token {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode() or "null")
    except urllib.error.HTTPError as exc:
        try:
            reason = json.loads(exc.read().decode()).get("error")
        except (ValueError, AttributeError):
            reason = None
        raise LibraryError(f"{url}: HTTP {exc.code}: {reason or exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise LibraryError(f"{url}: {getattr(exc, 'reason', exc)}") from None


def fetch_records(server: str):
    body = _request(server, "/api/library/records")
    if not isinstance(body, dict) or not isinstance(body.get("records"), list):
        raise LibraryError(f"{server}: /api/library/records did not return records")
    runners = [RunnerInfo(r.get("name", ""), list(r.get("labels") or []), r.get("fingerprint"))
               for r in body.get("runners") or [] if isinstance(r, dict)]
    return body["records"], runners


def replay_on_runner(server: str, runner: str, records, fingerprints: set, per_size: int = 3,
                     timeout: float = 3600, poll_s: float = 1.0, log=None) -> list:
    """See the module docstring."""
    from .replay import _ranked
    sources = fingerprints_with_records(records) - set(fingerprints)
    groups = {}
    for fp in sources:
        for key, rows in candidates(records, {fp}).items():
            groups.setdefault(key, {})[fp] = rows
    jobs = []
    for (kernel, skey), rows_by_fp in sorted(groups.items()):
        sequences = [[]] + [r["steps"] for r, _ in _ranked(rows_by_fp, per_size)]
        for steps in sequences:
            job = _request(server, "/api/jobs", {"kernel": kernel, "sizes": dict(skey),
                                                  "steps": steps, "runner": runner})
            jobs.append(job["job"])
            if log:
                log(f"submitted job {job['job']}: {kernel} {dict(skey)} ({len(steps)} steps) on {runner}")
    deadline, done = time.monotonic() + timeout, {}
    while len(done) < len(jobs):
        for job_id in jobs:
            if job_id not in done:
                job = _request(server, f"/api/jobs/{job_id}")
                if job.get("final"):
                    done[job_id] = job
        if len(done) < len(jobs):
            if time.monotonic() > deadline:
                raise LibraryError(f"{len(jobs) - len(done)} benchmark job(s) on {runner} "
                                   f"not finished after {timeout:g} s")
            time.sleep(poll_s)
    return [done[j] for j in jobs]

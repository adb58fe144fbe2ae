"""The thin HTTP client of ``library build --server URL`` (standard library only).

* ``fetch_records(server)`` -> (records, runners): ``GET /api/library/records``, the
  verified measurements of every runner in the records.py format, and the runners
  (name, labels, fingerprint) as select.RunnerInfo.
* ``replay_on_runner(server, runner, records, fingerprints)``: for a runner without
  measurements, submits one benchmark job (``POST /api/jobs``) per best step sequence of the
  other machines, plus the untransformed kernel, per (kernel, sizes), waits until they are
  final (``GET /api/jobs/ID``) and returns the transfers (replay.replay_here's format).

``$DOJO_API_TOKEN`` (a ``pdk_...`` user token), when set, is sent as
``Authorization: Token ...``.  Every failure is a LibraryError with the server's reason.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

from .select import LibraryError, RunnerInfo, candidates, fingerprints_with_records, full_sizes


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
                     timeout: float = 3600, poll_s: float = 1.0, log=None, kernels=None) -> list:
    """See the module docstring; the transfers, as replay.replay_here reports them."""
    from .replay import _ranked
    sources = fingerprints_with_records(records) - set(fingerprints)
    groups = {}
    for fp in sources:
        for key, rows in candidates(records, {fp}).items():
            if kernels is None or key[0] in kernels:
                groups.setdefault(key, {})[fp] = rows
    submitted = []          # (kernel, sizes, source record or None, source speedup, job id)
    for (kernel, skey), rows_by_fp in sorted(groups.items()):
        for source, speedup in [(None, None)] + _ranked(rows_by_fp, per_size):
            steps = source["steps"] if source else []
            job = _request(server, "/api/jobs", {"kernel": kernel, "sizes": dict(skey),
                                                  "steps": steps, "runner": runner})
            submitted.append((kernel, full_sizes(kernel, dict(skey)), source, speedup, job["job"]))
            if log:
                log(f"submitted job {job['job']}: {kernel} {dict(skey)} ({len(steps)} steps) on {runner}")
    done = _wait(server, [s[-1] for s in submitted], runner, timeout, poll_s)
    transfers, base = [], {}
    for kernel, sizes, source, speedup, job_id in submitted:
        job = done[job_id]
        result = job.get("result") or {}
        ok = job.get("state") == "done" and result.get("verified") is True
        med = result.get("median_s") if ok else None
        if source is None:
            base[(kernel, tuple(sorted(sizes.items())))] = med
            continue
        here_base = base.get((kernel, tuple(sorted(sizes.items()))))
        here = here_base / med if here_base and med else None
        transfers.append({"kernel": kernel, "sizes": sizes, "steps": len(source["steps"]),
                          "source_runner": source.get("runner"),
                          "source_fingerprint": source.get("fingerprint"), "source_speedup": speedup,
                          "here_speedup": here, "verified": ok, "job": job_id,
                          "error": None if ok else (job.get("error") or job.get("state")),
                          "held": bool(here and here > 1.0)})
    return transfers


def _wait(server, jobs, runner, timeout, poll_s) -> dict:
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
    return done

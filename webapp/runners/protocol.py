"""The runner protocol (views.py maps these to HTTP): register, authenticate, heartbeat,
claim, report, release, goodbye.

Guarantees: every refusal is ``Refusal(status, reason)``; every state change happens in
a transaction on a locked job row (``FOR UPDATE OF`` the job alone, so that it works on
PostgreSQL, where the nullable runner join cannot be locked) and is pushed once
committed.  A registered runner name cannot be taken over: registering it again needs
that runner's secret, or a registration token issued to replace that very name; the
deployment's bootstrap token registers new names only.
"""
from __future__ import annotations

import hmac
import json
import re

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webapp.refusal import Refusal

from .models import Job, RegistrationToken, Runner, digest, offline_after
from .services import (LABEL_RE, MAX_JSON, NAME_RE, RESULT_FIELDS, after_commit,
                       setting, job_spec, redispatch, reassign, requeue_or_lose)
from .shapes import iso, job_dict

def clean_peaks(peaks) -> dict:
    """A runner's measured peaks: positive finite ``gflops`` and ``gbytes_per_s`` (both
    required) plus short descriptive fields; {} for None; Refusal(400) naming the problem."""
    if peaks is None:
        return {}
    if not isinstance(peaks, dict) or len(json.dumps(peaks)) > 4096:
        raise Refusal(400, "peaks: an object of at most 4 KiB")
    out = {}
    for key in ("gflops", "gbytes_per_s"):
        value = peaks.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9:
            raise Refusal(400, f"peaks.{key}: a positive number (measured on the runner)")
        out[key] = float(value)
    for key in ("threads", "vector_bytes", "array_bytes"):
        if isinstance(peaks.get(key), int) and not isinstance(peaks.get(key), bool):
            out[key] = peaks[key]
    for key in ("target", "method", "measured_at"):
        if isinstance(peaks.get(key), str):
            out[key] = peaks[key][:200]
    return out


def register(token: str, name, labels, hardware, sandbox_info, secret=None, peaks=None) -> dict:
    """A runner joins: a new name with any usable token; an existing name only with that
    runner's current ``secret`` or a token issued to replace that name (403 otherwise).
    Its ``peaks`` (``clean_peaks``) are stored; a registration without them keeps the
    runner's earlier ones."""
    if secret is not None and not isinstance(secret, str):
        raise Refusal(400, "secret: the runner's current secret, a string")
    if not isinstance(token, str) or not token:
        raise Refusal(400, "token: a registration token is required")
    if name is not None and (not isinstance(name, str) or not NAME_RE.match(name)):
        raise Refusal(400, "name: 1-64 letters, digits, '_', '.', '-' (starting with a letter or digit)")
    if not isinstance(labels, list) or not all(isinstance(l, str) and LABEL_RE.match(l) for l in labels):
        raise Refusal(400, "labels: a list of short names (letters, digits, '_.:+-')")
    if not isinstance(hardware, dict) or len(json.dumps(hardware)) > MAX_JSON:
        raise Refusal(400, "hardware: an object of at most 64 KiB")
    if sandbox_info is not None and not isinstance(sandbox_info, dict):
        raise Refusal(400, "sandbox: an object")
    peaks = clean_peaks(peaks)
    from runners.celery_app import queue_for
    from runners.hardware import default_labels

    now = timezone.now()
    with transaction.atomic():
        tok = RegistrationToken.objects.select_for_update().filter(token_hash=digest(token)).first()
        bootstrap = setting("DOJO_RUNNER_BOOTSTRAP_TOKEN", None)
        if tok is None and bootstrap and hmac.compare_digest(token.encode(), bootstrap.encode()):
            pass                                  # the deployment's shared token (compose.yaml)
        elif tok is None:
            raise Refusal(403, "unknown registration token")
        else:
            ok, why = tok.usable(now)
            if not ok:
                raise Refusal(403, why)
        if not name:
            host = re.sub(r"[^A-Za-z0-9_.-]", "-", str((hardware.get("host") or "runner")))[:40]
            name = f"{host}-{Runner.objects.count() + 1}"
            while Runner.objects.filter(name=name).exists():
                name += "x"
        all_labels = list(dict.fromkeys(labels + default_labels(hardware)))[:32]
        runner = Runner.objects.select_for_update().filter(name=name).first()
        if runner is None:
            runner = Runner(name=name, queue=queue_for(name))
        elif not runner.enabled:
            raise Refusal(403, f"runner {name} is disabled")
        elif not _may_replace(runner, tok, secret):
            raise Refusal(403, f"runner name {name} is taken: registering it again needs that "
                               "runner's secret or a token issued to replace it")
        secret = runner.set_secret()
        runner.labels, runner.hardware, runner.sandbox = all_labels, hardware, sandbox_info or {}
        if peaks:
            runner.peaks = peaks
        runner.last_heartbeat, runner.current_job_id, runner.token = now, None, tok
        runner.save()
        if tok is not None:
            if tok.uses_left is not None:
                tok.uses_left -= 1
            tok.last_used = now
            tok.save()
        # a new incarnation: what the old one was running is lost with it; what was
        # queued for it is sent again (the old messages may be gone with the broker)
        queued = list(Job.objects.select_for_update().filter(runner=runner, state=Job.QUEUED))
        for job in Job.objects.select_for_update().filter(runner=runner, state=Job.RUNNING):
            requeue_or_lose(job, f"runner {name} restarted")
        for job in queued:
            redispatch(job, f"runner {name} registered again")
    broker = getattr(settings, "DOJO_RUNNER_BROKER_URL", None) or settings.DOJO_BROKER_URL
    return {"name": runner.name, "secret": secret, "queue": runner.queue, "broker_url": broker,
            "broker_options": settings.DOJO_BROKER_OPTIONS,
            "heartbeat_s": float(setting("DOJO_RUNNER_HEARTBEAT", 3)),
            "offline_after_s": offline_after().total_seconds(), "labels": all_labels}


def _may_replace(runner: Runner, tok, secret) -> bool:
    if secret and hmac.compare_digest(digest(secret), runner.secret_hash):
        return True
    return tok is not None and bool(tok.replaces) and tok.replaces == runner.name


def authenticate(header: str | None) -> Runner:
    if not header:
        raise Refusal(401, "missing Authorization: Bearer <runner secret>")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Refusal(401, "Authorization must be 'Bearer <runner secret>'")
    runner = Runner.objects.filter(secret_hash=digest(secret.strip())).first()
    if runner is None:
        raise Refusal(403, "unknown runner secret")
    if not runner.enabled:
        raise Refusal(403, f"runner {runner.name} is disabled")
    return runner


def _job_id(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refusal(400, "current_job must be a job id or null")
    return value


def heartbeat(runner: Runner, current_job=None) -> dict:
    current_job = _job_id(current_job)
    now = timezone.now()
    cancel_ids = []
    Runner.objects.filter(id=runner.id).update(last_heartbeat=now, current_job_id=current_job)
    if current_job is not None and Job.objects.filter(id=current_job, state__in=Job.FINAL).exists():
        # A heartbeat sent before the job's result was stored must not leave the runner busy
        # after the result freed it. Checked after the write, not before: a result stored
        # between a check and the write would otherwise be overwritten until the next beat.
        Runner.objects.filter(id=runner.id, current_job_id=current_job).update(current_job_id=None)
    if current_job is not None:
        updated = Job.objects.filter(id=current_job, runner=runner, state=Job.RUNNING).update(heartbeat=now)
        if not updated:
            job = Job.objects.filter(id=current_job).only("state", "runner").first()
            if job is None or job.state == Job.CANCELLED or job.runner_id != runner.id:
                cancel_ids.append(current_job)
    return {"ok": True, "cancel": cancel_ids, "server_time": iso(now)}


def _check_ticket(job: Job, attempt: int) -> None:
    """The ticket's attempt must be the one the job is at: the next one of a queued job,
    or the current one of a running job (its message came back after a worker restart)."""
    expected = job.attempts + 1 if job.state == Job.QUEUED else job.attempts
    if attempt != expected or attempt > job.max_attempts:
        raise Refusal(409, f"job {job.id} is {job.state} at attempt {job.attempts}; "
                           f"the ticket for attempt {attempt} is stale")


def _positive(value, refused: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refusal(400, refused)
    return value


def _locked_job(runner: Runner, job_id: int, not_theirs: int, jobs=None) -> Job:
    """The job, locked until the transaction ends (``jobs``: the query, by default
    ``Job.objects.select_for_update()``); refused (404) when there is none, and with the
    status ``not_theirs`` when it is assigned to another runner."""
    job = (jobs if jobs is not None else Job.objects.select_for_update()).filter(id=job_id).first()
    if job is None:
        raise Refusal(404, f"no job {job_id}")
    if job.runner_id != runner.id:
        raise Refusal(not_theirs, f"job {job_id} is not assigned to runner {runner.name}")
    return job


def claim(runner: Runner, job_id: int, attempt=None) -> dict:
    """The runner takes the job: queued (or running, redelivered) -> running, attempts + 1.
    With ``attempt`` (its ticket's, runners.tickets), refused unless the job is at that
    attempt (``_check_ticket``).  Refusal when the job is another runner's or final."""
    if attempt is not None:
        attempt = _positive(attempt, "attempt (the ticket's) must be a positive integer")
    now = timezone.now()
    with transaction.atomic():
        job = _locked_job(runner, job_id, 409)
        if job.state not in Job.ACTIVE:
            raise Refusal(409, f"job {job_id} is {job.state}")
        if attempt is not None:
            _check_ticket(job, attempt)
        if job.state == Job.RUNNING:
            job.log("restarted", runner=runner.name)       # redelivered after a worker restart
        if job.attempts >= job.max_attempts:
            requeue_or_lose(job, "no attempts left")
            raise Refusal(409, f"job {job_id} is lost (no attempts left)")
        job.attempts += 1
        job.state = Job.RUNNING
        job.started = job.heartbeat = now
        job.log("running", runner=runner.name, attempt=job.attempts)
        job.save()
        Runner.objects.filter(id=runner.id).update(current_job_id=job.id, last_heartbeat=now)
        job.runner = runner
        after_commit(job)
    return {"job": job_spec(job), "attempt": job.attempts}


def _clean_result(result) -> dict:
    if not isinstance(result, dict):
        raise Refusal(400, "result must be an object")
    if len(json.dumps(result)) > MAX_JSON:
        raise Refusal(400, "result: larger than 64 KiB")
    out = {k: result.get(k) for k in RESULT_FIELDS}
    for k, v in result.items():
        if k not in out:
            out[k] = v
    if out.get("error") is not None:
        out["error"] = str(out["error"])[:2000]
    return out


def report(runner: Runner, job_id: int, attempt, state, result, claim: bool = False) -> dict:
    """Store a runner's result, once: a repeat of the same attempt's result is a no-op.

    ``claim``: the job ended before its runner claimed it (runners claim a job that runs
    long enough in the background, ``runners.execute``); the result then carries the
    claim of its ticket's attempt, made in the same transaction under the same checks."""
    if not isinstance(claim, bool):
        raise Refusal(400, "claim must be true or false")
    if state not in (Job.DONE, Job.FAILED, Job.CANCELLED):
        raise Refusal(400, "state must be 'done', 'failed' or 'cancelled'")
    _positive(attempt, "attempt must be a positive integer (the one claim returned)")
    clean = _clean_result(result)
    with transaction.atomic():
        job = _locked_job(runner, job_id, 403)
        if job.state == Job.CANCELLED:
            return {"status": "ignored", "reason": "the job was cancelled", "job": job_dict(job)}
        if job.final:
            stored = (job.result or {}).get("attempt")
            if stored == attempt:
                return {"status": "duplicate", "job": job_dict(job)}
            raise Refusal(409, f"job {job_id} already finished ({job.state}) with attempt {stored}")
        now = timezone.now()
        if claim and job.state == Job.QUEUED:
            _check_ticket(job, attempt)
            job.attempts, job.state, job.started, job.heartbeat = attempt, Job.RUNNING, now, now
            job.log("running", runner=runner.name, attempt=attempt, claimed="with its result")
        if job.state != Job.RUNNING or attempt != job.attempts:
            raise Refusal(409, f"job {job_id} is {job.state} at attempt {job.attempts}; "
                               f"attempt {attempt} is stale")
        if state == Job.CANCELLED:             # the runner killed it on a stale cancel request
            state, clean["error"] = Job.FAILED, clean.get("error") or "cancelled by the runner"
        if state == Job.DONE and clean.get("verified") is False:
            state = Job.FAILED
            clean["error"] = clean.get("error") or "outputs differ from the untransformed kernel"
        work, med = job.work or {}, clean.get("median_s")
        if isinstance(med, (int, float)) and med > 0:
            if clean.get("gflops") is None and work.get("flops"):
                clean["gflops"] = work["flops"] / med / 1e9
            if clean.get("gbytes_per_s") is None and work.get("bytes"):
                clean["gbytes_per_s"] = work["bytes"] / med / 1e9
        clean.update(attempt=attempt, runner=runner.name, hardware=runner.hardware or {},
                     peaks=runner.peaks or {})
        job.state, job.result, job.finished = state, clean, now
        job.log(state, runner=runner.name, attempt=attempt)
        job.save()
        Runner.objects.filter(id=runner.id, current_job_id=job.id).update(current_job_id=None)
        job.runner = runner
        after_commit(job)
    return {"status": "stored", "job": job_dict(job)}


def release(runner: Runner, job_id: int, reason) -> dict:
    """The runner hands a job back (its worker died, or it is shutting down)."""
    reason = str(reason or "handed back")[:300]
    with transaction.atomic():
        job = _locked_job(runner, job_id, 403, Job.objects.select_for_update(of=("self",)).select_related("runner"))
        if job.state != Job.RUNNING:
            return {"status": "ignored", "job": job_dict(job)}
        Runner.objects.filter(id=runner.id, current_job_id=job.id).update(current_job_id=None)
        requeue_or_lose(job, f"runner {runner.name}: {reason}")
    return {"status": "requeued" if job.state == Job.QUEUED else job.state, "job": job_dict(job)}


def goodbye(runner: Runner) -> dict:
    """A runner stopping cleanly: offline at once, its jobs go to others."""
    with transaction.atomic():
        Runner.objects.filter(id=runner.id).update(last_heartbeat=None, current_job_id=None)
        for job in Job.objects.select_for_update(of=("self",)).select_related("runner").filter(
                runner=runner, state__in=Job.ACTIVE):
            if job.state == Job.RUNNING:
                requeue_or_lose(job, f"runner {runner.name} stopped")
            else:
                reassign(job, f"runner {runner.name} stopped")
    return {"ok": True}

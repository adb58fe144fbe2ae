"""The job and runner services: a thin layer over dojo_core and the models.

For the web app (the editor and the JSON API):

    submit_benchmark(source, steps, sizes=None, runner=None, kernel=None,
                     session_id=None, step_index=None, options=None) -> Job
    job_dict(job) -> dict          the JSON of GET /api/jobs/ID
    runner_dict(runner) -> dict    one entry of GET /api/runners
    cancel(job) -> Job

For the runner protocol (views.py maps these to HTTP): register, authenticate,
heartbeat, claim, report, release, goodbye.  For the reaper: requeue_or_lose,
reassign, dispatch.

Every state change is made in a transaction on a locked row and, once
committed, pushed as ``{"type": "job.update", "job": job_dict(job)}`` to the
Channels groups ``job-<id>`` and ``session-<session_id>``, and (when the job is
queued on a runner) published to that runner's Celery queue.

Bad input raises ValueError with the reason (NoRunner, a ValueError, when no
online runner matches); protocol refusals raise Refused(status, reason).
"""
from __future__ import annotations

import hmac
import json
import logging
import re

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from . import dispatch, notify
from .models import Job, RegistrationToken, Runner, digest, offline_after

log = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,39}$")
MAX_SOURCE = 256 * 1024
MAX_STEPS = 2000
MAX_JSON = 64 * 1024
RESULT_FIELDS = ("median_s", "min_s", "max_s", "gflops", "verified", "compiler", "flags",
                 "threads", "error")


class NoRunner(ValueError):
    """No online runner matches the request."""


class Refused(Exception):
    """A refusal of the runner protocol: HTTP status and reason."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def _iso(dt):
    return dt.isoformat(timespec="milliseconds") if dt else None


def _setting(name, default):
    return getattr(settings, name, default)


# =========================================================================== JSON views of models

def job_dict(job: Job) -> dict:
    result = job.result
    return {
        "id": job.id,
        "url": f"/api/jobs/{job.id}",
        "state": job.state,
        "final": job.final,
        "kernel": job.kernel or None,
        "sizes": job.sizes or {},
        "steps": list(job.steps or []),
        "options": job.options or {},
        "runner": job.runner.name if job.runner_id and job.runner else None,
        "requested_runner": job.requested_runner,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "created": _iso(job.created),
        "started": _iso(job.started),
        "finished": _iso(job.finished),
        "heartbeat": _iso(job.heartbeat),
        "result": result,
        "error": (result or {}).get("error") if isinstance(result, dict) else None,
        "session_id": job.session_id,
        "step_index": job.step_index,
    }


def runner_dict(runner: Runner, depth: dict | None = None) -> dict:
    d = {
        "name": runner.name,
        "status": runner.status,
        "online": runner.online,
        "labels": list(runner.labels or []),
        "hardware": runner.hardware or {},
        "sandbox": runner.sandbox or {},
        "queue": runner.queue,
        "last_heartbeat": _iso(runner.last_heartbeat),
        "registered": _iso(runner.registered),
        "current_job": runner.current_job_id,
    }
    if depth is not None:
        d["queue_depth"] = depth.get(runner.id, 0)
    return d


def runners_list() -> list[dict]:
    runners = list(Runner.objects.all())
    depth = dict(Job.objects.filter(state=Job.QUEUED, runner__isnull=False)
                 .values_list("runner").annotate(n=Count("id")).values_list("runner", "n"))
    return [runner_dict(r, depth) for r in runners]


# =========================================================================== notifications, dispatch

def _after_commit(job: Job, send: bool = False) -> None:
    """Push the job's new state (and publish it to its runner's queue) once committed.

    A job to send has its ``dispatched`` time set in the same transaction (so that no
    write follows the publish, when the runner's claim is on its way); a publish that
    fails clears it again, and the reaper sends the job anew."""
    snapshot = job_dict(job)
    queue = job.runner.queue if send and job.runner_id and job.state == Job.QUEUED else None
    job_id, marked = job.id, job.dispatched
    ticket = signature = None
    if queue:
        from runners import tickets
        ticket = {"job": job_spec(job), "attempt": job.attempts + 1, "runner": job.runner.name}
        signature = tickets.sign(tickets.dispatch_key(job.runner.secret_hash), ticket)

    def fire():
        if queue and not dispatch.send(job_id, queue, ticket, signature):
            Job.objects.filter(id=job_id, state=Job.QUEUED, dispatched=marked).update(dispatched=None)
        notify.push(snapshot)

    transaction.on_commit(fire)


def online_runners():
    return Runner.objects.filter(enabled=True, last_heartbeat__gte=timezone.now() - offline_after())


def pick_runner(wanted: str | None, exclude_id=None) -> Runner | None:
    """The online runner matching a name or label with the fewest active jobs, or None.
    (Active jobs are counted through the state index, not over each runner's history.)"""
    candidates = [r for r in online_runners() if r.matches(wanted) and r.id != exclude_id]
    if not candidates:
        return None
    named = next((r for r in candidates if wanted and r.name == wanted), None)
    if named is not None or len(candidates) == 1:
        return named or candidates[0]
    active = dict(Job.objects.filter(state__in=Job.ACTIVE, runner__in=[r.id for r in candidates])
                  .values_list("runner").annotate(n=Count("id")).values_list("runner", "n"))
    return min(candidates, key=lambda r: (active.get(r.id, 0), r.name))


# =========================================================================== submit, cancel

def _clean_steps(steps) -> list[str]:
    if steps is None:
        return []
    if isinstance(steps, str):
        from dojo_core.steps import parse_steps
        return [text for _, text in parse_steps(steps)]
    if not isinstance(steps, (list, tuple)):
        raise ValueError("steps must be a list of step texts")
    if len(steps) > MAX_STEPS:
        raise ValueError(f"too many steps ({len(steps)}, limit {MAX_STEPS})")
    out = []
    for i, step in enumerate(steps, start=1):
        if not isinstance(step, str):
            raise ValueError(f"step {i} is not a string")
        text = " ".join(step.split())
        if not text or "#" in text:
            raise ValueError(f"step {i} {step!r}: not a step text")
        out.append(text)
    return out


def _clean_sizes(sizes) -> dict:
    if sizes is None:
        return {}
    if not isinstance(sizes, dict):
        raise ValueError("sizes must be an object {NAME: positive integer}")
    out = {}
    for name, value in sizes.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"size name {name!r} is not a name")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > 1 << 24:
            raise ValueError(f"size {name} must be a positive integer, not {value!r}")
        out[name] = value
    return out


def _clean_options(options) -> dict:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ValueError("options must be an object")
    max_wall = float(_setting("DOJO_JOB_MAX_TIMEOUT", 1800))
    out = {}
    for key, value in options.items():
        if key == "min_time":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 60:
                raise ValueError("options.min_time must be a number of seconds in (0, 60]")
            out[key] = float(value)
        elif key == "timeout_s":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 1 <= value <= max_wall:
                raise ValueError(f"options.timeout_s must be a number of seconds in [1, {max_wall:g}]")
            out[key] = float(value)
        elif key == "threads":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
                raise ValueError("options.threads must be a positive integer")
            out[key] = value
        elif key in ("flush", "dry_run"):
            if not isinstance(value, bool):
                raise ValueError(f"options.{key} must be true or false")
            out[key] = value
        else:
            raise ValueError(f"unknown option {key!r} (known: min_time, timeout_s, threads, flush, dry_run)")
    out.setdefault("timeout_s", float(_setting("DOJO_JOB_TIMEOUT", 300)))
    return out


def library_work(name: str, canonical: str, sizes: dict) -> dict:
    """{"flops", "bytes"} when the kernel is the library's kernel ``name`` unchanged."""
    from dojo_core import kernels
    from dojo_core.parser import parse
    from dojo_core.printer import print_program
    try:
        lib = print_program(parse(kernels.kernel_path(name).read_text(), f"{name}.dojo"))
        if lib != canonical:
            return {}
        entry = kernels.info(name)
        program = parse(canonical, "<source>").with_sizes(sizes) if sizes else parse(canonical, "<source>")
        values = program.size_values
        work = {"flops": entry.flops(values) if entry.flops is not None else None,
                "bytes": entry.bytes(values) if getattr(entry, "bytes", None) is not None else None}
        return {k: v for k, v in work.items() if v is not None}
    except Exception:                                            # noqa: BLE001 - optional information
        return {}


def validate(source: str, steps, sizes) -> tuple[str, str, list, dict]:
    """(canonical source, kernel name, steps, sizes), or ValueError with the reason: the
    source must parse and check at the sizes, and every step must apply in turn."""
    from dojo_core.errors import DojoError
    from dojo_core.parser import parse
    from dojo_core.printer import print_program
    from dojo_core.source import load_source
    from dojo_core.steps import replay

    if not isinstance(source, str) or not source.strip():
        raise ValueError("source: empty kernel")
    if len(source) > MAX_SOURCE:
        raise ValueError(f"source: too large ({len(source)} characters, limit {MAX_SOURCE})")
    steps = _clean_steps(steps)
    sizes = _clean_sizes(sizes)
    try:
        canonical = print_program(parse(source, "<source>"))
        program = load_source(canonical, "<source>", sizes)
        replay(program, steps, "<steps>")
    except DojoError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("source: nested too deeply") from None
    return canonical, program.name, steps, sizes


def submit_benchmark(source: str, steps=None, sizes=None, runner: str | None = None,
                     kernel: str | None = None, session_id=None, step_index=None,
                     options=None, max_attempts: int | None = None) -> Job:
    """Validate and queue a benchmark of ``source`` after ``steps`` at ``sizes`` on an
    online runner whose name or label is ``runner`` (None: any online runner).  The job's
    ``created`` is the time of the call, before validation."""
    created = timezone.now()
    canonical, name, steps, sizes = validate(source, steps, sizes)
    options = _clean_options(options)
    if runner is not None and (not isinstance(runner, str) or not runner.strip()):
        raise ValueError("runner must be a runner name or label")
    runner = runner.strip() if runner else None
    if session_id is not None:
        session_id = str(session_id)[:64]
    if step_index is not None and (isinstance(step_index, bool) or not isinstance(step_index, int)):
        raise ValueError("step_index must be an integer")
    with transaction.atomic():
        target = pick_runner(runner)
        if target is None:
            online = sorted(r.name for r in online_runners())
            if not runner:
                raise NoRunner("no runner is online")
            raise NoRunner(f"no online runner matches {runner!r} ("
                           + (f"online: {', '.join(online)})" if online else "no runner is online)"))
        job = Job(source=canonical, steps=steps, sizes=sizes, kernel=(kernel or name)[:100],
                  options=options, work=library_work(name, canonical, sizes), runner=target, requested_runner=runner,
                  max_attempts=max_attempts or int(_setting("DOJO_JOB_MAX_ATTEMPTS", 3)),
                  session_id=session_id, step_index=step_index, created=created,
                  dispatched=timezone.now())
        job.log("queued", runner=target.name)
        job.save()
        _after_commit(job, send=True)
    return job


def cancel(job: Job) -> Job:
    """Cancel a queued or running job (a running one is killed on the runner's next
    heartbeat); a finished job is returned unchanged."""
    with transaction.atomic():
        job = Job.objects.select_for_update().select_related("runner").get(id=job.id)
        if job.state in Job.ACTIVE:
            job.state = Job.CANCELLED
            job.finished = timezone.now()
            job.result = {**(job.result or {}), "error": "cancelled"}
            job.log("cancelled")
            job.save()
            _after_commit(job)
    return job


# =========================================================================== requeue (reaper, release)

def requeue_or_lose(job: Job, reason: str) -> Job:
    """Put a running (or stranded queued) job back in the queue, or mark it lost when it
    has used its attempts. Call inside a transaction with the job row locked."""
    now = timezone.now()
    old = job.runner.name if job.runner_id else None
    if job.attempts >= job.max_attempts:
        job.state = Job.LOST
        job.finished = now
        job.result = {"error": f"lost: {reason} (after {job.attempts} attempt"
                               f"{'s' if job.attempts != 1 else ''})"}
        job.log("lost", runner=old, reason=reason)
        if job.runner_id:
            Runner.objects.filter(id=job.runner_id, current_job_id=job.id).update(current_job_id=None)
        job.save()
        _after_commit(job)
        return job
    target = pick_runner(job.requested_runner)
    job.state = Job.QUEUED
    job.runner = target
    job.started = job.heartbeat = None
    job.dispatched = now if target is not None else None
    job.log("requeued", runner=old, to=target.name if target else None, reason=reason)
    job.save()
    _after_commit(job, send=target is not None)
    return job


def reassign(job: Job, reason: str) -> Job:
    """A queued job whose runner went away: give it to another matching online runner (or
    none yet). Attempts are not counted: the job never started."""
    target = pick_runner(job.requested_runner)
    if (target.id if target is not None else None) == job.runner_id:
        return job                               # no change (e.g. still no runner)
    old = job.runner.name if job.runner_id else None
    job.runner = target
    job.dispatched = timezone.now() if target is not None else None
    job.log("reassigned", runner=old, to=target.name if target else None, reason=reason)
    job.save()
    _after_commit(job, send=target is not None)
    return job


def redispatch(job: Job, reason: str) -> None:
    job.log("redispatched", runner=job.runner.name if job.runner_id else None, reason=reason)
    job.dispatched = timezone.now()
    job.save(update_fields=["events", "dispatched"])
    _after_commit(job, send=True)


# =========================================================================== the runner protocol

def register(token: str, name, labels, hardware, sandbox_info) -> dict:
    if not isinstance(token, str) or not token:
        raise Refused(400, "token: a registration token is required")
    if name is not None and (not isinstance(name, str) or not NAME_RE.match(name)):
        raise Refused(400, "name: 1-64 letters, digits, '_', '.', '-' (starting with a letter or digit)")
    if not isinstance(labels, list) or not all(isinstance(l, str) and LABEL_RE.match(l) for l in labels):
        raise Refused(400, "labels: a list of short names (letters, digits, '_.:+-')")
    if not isinstance(hardware, dict) or len(json.dumps(hardware)) > MAX_JSON:
        raise Refused(400, "hardware: an object of at most 64 KiB")
    if sandbox_info is not None and not isinstance(sandbox_info, dict):
        raise Refused(400, "sandbox: an object")
    from runners.celery_app import queue_for
    from runners.hardware import default_labels

    now = timezone.now()
    with transaction.atomic():
        tok = RegistrationToken.objects.select_for_update().filter(token_hash=digest(token)).first()
        bootstrap = _setting("DOJO_RUNNER_BOOTSTRAP_TOKEN", None)
        if tok is None and bootstrap and hmac.compare_digest(token.encode(), bootstrap.encode()):
            pass                                  # the deployment's shared token (compose.yaml)
        elif tok is None:
            raise Refused(403, "unknown registration token")
        else:
            ok, why = tok.usable(now)
            if not ok:
                raise Refused(403, why)
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
            raise Refused(403, f"runner {name} is disabled")
        secret = runner.set_secret()
        runner.labels, runner.hardware, runner.sandbox = all_labels, hardware, sandbox_info or {}
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
            "heartbeat_s": float(_setting("DOJO_RUNNER_HEARTBEAT", 3)),
            "offline_after_s": offline_after().total_seconds(), "labels": all_labels}


def authenticate(header: str | None) -> Runner:
    if not header:
        raise Refused(401, "missing Authorization: Bearer <runner secret>")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Refused(401, "Authorization must be 'Bearer <runner secret>'")
    runner = Runner.objects.filter(secret_hash=digest(secret.strip())).first()
    if runner is None:
        raise Refused(403, "unknown runner secret")
    if not runner.enabled:
        raise Refused(403, f"runner {runner.name} is disabled")
    return runner


def _job_id(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refused(400, "current_job must be a job id or null")
    return value


def heartbeat(runner: Runner, current_job=None) -> dict:
    current_job = _job_id(current_job)
    now = timezone.now()
    cancel_ids = []
    if current_job is not None and Job.objects.filter(
            id=current_job, state__in=(Job.DONE, Job.FAILED, Job.LOST, Job.CANCELLED)).exists():
        # a heartbeat sent before the job's result was stored must not mark the runner busy
        # again after the result freed it
        busy_with = None
    else:
        busy_with = current_job
    Runner.objects.filter(id=runner.id).update(last_heartbeat=now, current_job_id=busy_with)
    if current_job is not None:
        updated = Job.objects.filter(id=current_job, runner=runner, state=Job.RUNNING).update(heartbeat=now)
        if not updated:
            job = Job.objects.filter(id=current_job).only("state", "runner").first()
            if job is None or job.state == Job.CANCELLED or job.runner_id != runner.id:
                cancel_ids.append(current_job)
    return {"ok": True, "cancel": cancel_ids, "server_time": _iso(now)}


def job_spec(job: Job) -> dict:
    return {"id": job.id, "source": job.source, "steps": list(job.steps or []),
            "sizes": job.sizes or {}, "kernel": job.kernel, "options": job.options or {},
            "attempts": job.attempts, "max_attempts": job.max_attempts}


def _check_ticket(job: Job, attempt: int) -> None:
    """The ticket's attempt must be the one the job is at: the next one of a queued job,
    or the current one of a running job (its message came back after a worker restart)."""
    expected = job.attempts + 1 if job.state == Job.QUEUED else job.attempts
    if attempt != expected or attempt > job.max_attempts:
        raise Refused(409, f"job {job.id} is {job.state} at attempt {job.attempts}; "
                           f"the ticket for attempt {attempt} is stale")


def _positive(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refused(400, f"{what} must be a positive integer")
    return value


def claim(runner: Runner, job_id: int, attempt=None) -> dict:
    """The runner takes the job: queued (or running, redelivered) -> running, attempts + 1.
    With ``attempt`` (its ticket's, runners.tickets), refused unless the job is at that
    attempt (``_check_ticket``).  Refused when the job is another runner's or final."""
    if attempt is not None:
        attempt = _positive(attempt, "attempt (the ticket's)")
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(id=job_id).first()
        if job is None:
            raise Refused(404, f"no job {job_id}")
        if job.runner_id != runner.id:
            raise Refused(409, f"job {job_id} is not assigned to runner {runner.name}")
        if job.state not in Job.ACTIVE:
            raise Refused(409, f"job {job_id} is {job.state}")
        if attempt is not None:
            _check_ticket(job, attempt)
        if job.state == Job.RUNNING:
            job.log("restarted", runner=runner.name)       # redelivered after a worker restart
        if job.attempts >= job.max_attempts:
            requeue_or_lose(job, "no attempts left")
            raise Refused(409, f"job {job_id} is lost (no attempts left)")
        job.attempts += 1
        job.state = Job.RUNNING
        job.started = job.heartbeat = now
        job.log("running", runner=runner.name, attempt=job.attempts)
        job.save()
        Runner.objects.filter(id=runner.id).update(current_job_id=job.id, last_heartbeat=now)
        job.runner = runner
        _after_commit(job)
    return {"job": job_spec(job), "attempt": job.attempts}


def _clean_result(result) -> dict:
    if not isinstance(result, dict):
        raise Refused(400, "result must be an object")
    if len(json.dumps(result)) > MAX_JSON:
        raise Refused(400, "result: larger than 64 KiB")
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
        raise Refused(400, "claim must be true or false")
    if state not in (Job.DONE, Job.FAILED, Job.CANCELLED):
        raise Refused(400, "state must be 'done', 'failed' or 'cancelled'")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise Refused(400, "attempt must be a positive integer (the one claim returned)")
    clean = _clean_result(result)
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(id=job_id).first()
        if job is None:
            raise Refused(404, f"no job {job_id}")
        if job.runner_id != runner.id:
            raise Refused(403, f"job {job_id} is not assigned to runner {runner.name}")
        if job.state == Job.CANCELLED:
            return {"status": "ignored", "reason": "the job was cancelled", "job": job_dict(job)}
        if job.final:
            stored = (job.result or {}).get("attempt")
            if stored == attempt:
                return {"status": "duplicate", "job": job_dict(job)}
            raise Refused(409, f"job {job_id} already finished ({job.state}) with attempt {stored}")
        now = timezone.now()
        if claim and job.state == Job.QUEUED:
            _check_ticket(job, attempt)
            job.attempts, job.state, job.started, job.heartbeat = attempt, Job.RUNNING, now, now
            job.log("running", runner=runner.name, attempt=attempt, claimed="with its result")
        if job.state != Job.RUNNING or attempt != job.attempts:
            raise Refused(409, f"job {job_id} is {job.state} at attempt {job.attempts}; "
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
        clean.update(attempt=attempt, runner=runner.name, hardware=runner.hardware or {})
        job.state, job.result, job.finished = state, clean, now
        job.log(state, runner=runner.name, attempt=attempt)
        job.save()
        Runner.objects.filter(id=runner.id, current_job_id=job.id).update(current_job_id=None)
        job.runner = runner
        _after_commit(job)
    return {"status": "stored", "job": job_dict(job)}


def release(runner: Runner, job_id: int, reason) -> dict:
    """The runner hands a job back (its worker died, or it is shutting down)."""
    reason = str(reason or "handed back")[:300]
    with transaction.atomic():
        job = Job.objects.select_for_update().select_related("runner").filter(id=job_id).first()
        if job is None:
            raise Refused(404, f"no job {job_id}")
        if job.runner_id != runner.id:
            raise Refused(403, f"job {job_id} is not assigned to runner {runner.name}")
        if job.state != Job.RUNNING:
            return {"status": "ignored", "job": job_dict(job)}
        Runner.objects.filter(id=runner.id, current_job_id=job.id).update(current_job_id=None)
        requeue_or_lose(job, f"runner {runner.name}: {reason}")
    return {"status": "requeued" if job.state == Job.QUEUED else job.state, "job": job_dict(job)}


def goodbye(runner: Runner) -> dict:
    """A runner stopping cleanly: offline at once, its jobs go to others."""
    with transaction.atomic():
        Runner.objects.filter(id=runner.id).update(last_heartbeat=None, current_job_id=None)
        for job in Job.objects.select_for_update().select_related("runner").filter(
                runner=runner, state__in=Job.ACTIVE):
            if job.state == Job.RUNNING:
                requeue_or_lose(job, f"runner {runner.name} stopped")
            else:
                reassign(job, f"runner {runner.name} stopped")
    return {"ok": True}

"""The job and runner services: a thin layer over dojo_core and the models.

For the web app (the editor and the JSON API):

    submit_benchmark(source, steps, sizes=None, runner=None, kernel=None,
                     session_id=None, step_index=None, options=None, batch=None) -> Job
    job_dict(job) -> dict          the JSON of GET /api/jobs/ID
    runner_dict(runner) -> dict    one entry of GET /api/runners
    cancel(job) -> Job

The runner protocol (register, authenticate, heartbeat, claim, report, release,
goodbye) is in protocol.py.  For the reaper:
requeue_or_lose, reassign, redispatch.

Row locks are ``select_for_update(of=("self",))``: PostgreSQL refuses FOR UPDATE on
the nullable side of the job's outer join to its runner.

Every state change is made in a transaction on a locked row and, once
committed, pushed as ``{"type": "job.update", "job": job_dict(job)}`` to the
Channels groups ``job-<id>`` and ``session-<session_id>``, and (when the job is
queued on a runner) published to that runner's Celery queue.

Bad input raises ValueError with the reason (NoRunner, a ValueError, when no
online runner matches); protocol refusals raise Refusal(status, reason) (webapp/refusal.py).
"""
from __future__ import annotations

import logging
import re
import secrets
import time

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from dojo_core import (MAX_SIZE, MAX_STEPS, DojoError, canonical, ir, kernels, load, parse, parse_steps,
                       program_hash, replay)
from runners import tickets

from . import dispatch, notify
from .shapes import job_dict, runner_dict, runners_list  # noqa: F401 - public here too
from .models import Job, Runner, offline_after

log = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,39}$")
MAX_SOURCE = 64 * 1024          # bytes of UTF-8, as for a session's source
VALIDATE_BUDGET_S = 4.0         # checking and replaying one job's program
MAX_JSON = 64 * 1024
RESULT_FIELDS = ("median_s", "min_s", "max_s", "q1_s", "q3_s", "gflops", "gbytes_per_s",
                 "verified", "max_error", "compiler", "flags", "threads", "baseline", "error")


class NoRunner(ValueError):
    """No online runner matches the request.  Not a DojoError: a state of the web service,
    not of the tool chain; webapp/api/jobs.py answers it 409."""


class GpuBindsRefused(NoRunner):
    """The program binds loops to the GPU, and no runner can time it as bound: runners time
    the generated C code, where ``gpu.block``/``gpu.thread`` binds do nothing."""


def gpu_binds(program) -> list[str]:
    """``"LOOP → gpu.AXIS"`` for each loop of ``program`` bound to a GPU axis, in order."""
    return [f"{loop.iterator} → {ann}" for loop in ir.loops(program)
            for ann in loop.annotations if ann.startswith("gpu.")]


def refuse_gpu_binds(binds: list[str], target: Runner | None, step_index=None) -> None:
    """GpuBindsRefused with the reason when ``binds`` is not empty."""
    if not binds:
        return
    what = f"step {step_index}" if step_index is not None else "this program"
    where = (f"runner {target.name} has no GPU" if target is not None and not (target.hardware or {}).get("gpus")
             else "runners time the generated C code")
    raise GpuBindsRefused(
        f"{what} binds loops to the GPU ({', '.join(binds[:4])}{', …' if len(binds) > 4 else ''}); "
        f"{where}, and there the binds do nothing, so its time would not be the time of this "
        "schedule. Benchmark a step without gpu binds, or read its CUDA code (.cu).")


def setting(name, default):
    """settings.NAME, or ``default`` where the settings do not set it."""
    return getattr(settings, name, default)


# =========================================================================== notifications, dispatch

def after_commit(job: Job, send: bool = False) -> None:
    """Push the job's new state (and publish it to its runner's queue) once committed.

    A job to send has its ``dispatched`` time set in the same transaction (so that no
    write follows the publish, when the runner's claim is on its way); a publish that
    fails clears it again, and the reaper sends the job anew."""
    snapshot = job_dict(job)
    queue = job.runner.queue if send and job.runner_id and job.state == Job.QUEUED else None
    job_id, marked = job.id, job.dispatched
    ticket = signature = None
    if queue:
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
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > MAX_SIZE:
            raise ValueError(f"size {name} must be a positive integer at most {MAX_SIZE}, not {value!r}")
        out[name] = value
    return out


def clean_options(options) -> dict:
    """A job's measurement options, checked (min_time, timeout_s, threads, flush, dry_run,
    baseline: also time the untransformed kernel in the same run); a ValueError naming the
    first bad one."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ValueError("options must be an object")
    max_wall = float(setting("DOJO_JOB_MAX_TIMEOUT", 1800))
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
        elif key in ("flush", "dry_run", "baseline"):
            if not isinstance(value, bool):
                raise ValueError(f"options.{key} must be true or false")
            out[key] = value
        else:
            raise ValueError(f"unknown option {key!r} (known: min_time, timeout_s, threads, flush, "
                             "dry_run, baseline)")
    out.setdefault("timeout_s", float(setting("DOJO_JOB_TIMEOUT", 300)))
    return out


def library_label(name: str, text: str) -> str:
    """``name`` when ``text`` is the library kernel ``name``'s own canonical text, else
    "": a job's kernel label comes from its source, never from what a request claims."""
    try:
        lib = canonical(parse(kernels.kernel_path(name).read_text(), f"{name}.dojo"))
    except Exception:                                            # noqa: BLE001 - not a library kernel
        return ""
    return name if lib == text else ""


def library_work(name: str, text: str, sizes: dict) -> dict:
    """{"flops", "bytes"} when the kernel (canonical ``text``) is the library's kernel ``name``
    unchanged."""
    try:
        if not library_label(name, text):
            return {}
        entry = kernels.info(name)
        program = parse(text, "<source>").with_sizes(sizes) if sizes else parse(text, "<source>")
        values = program.size_values
        work = {"flops": entry.flops(values) if entry.flops is not None else None,
                "bytes": entry.bytes(values) if getattr(entry, "bytes", None) is not None else None}
        return {k: v for k, v in work.items() if v is not None}
    except Exception:                                            # noqa: BLE001 - optional information
        return {}


def validate(source: str, steps, sizes) -> tuple[str, str, list, dict, str, list]:
    """(canonical source, kernel name, steps, sizes, program hash, gpu binds), or ValueError
    with the reason: the source must parse and check at the sizes, and every step must apply
    in turn.  The hash is ``dojo_core.records.program_hash`` of the program the job measures
    (after its steps), the same as a history step's stored IR at those sizes; the binds are
    ``gpu_binds`` of that program."""
    deadline = time.monotonic() + VALIDATE_BUDGET_S
    if not isinstance(source, str) or not source.strip():
        raise ValueError("source: empty kernel")
    size = len(source.encode("utf-8", "replace"))
    if size > MAX_SOURCE:
        raise ValueError(f"source: too large ({size} bytes, limit {MAX_SOURCE})")
    steps = _clean_steps(steps)
    sizes = _clean_sizes(sizes)
    try:
        text = canonical(parse(source, "<source>"))
        program = load(source, "<source>", sizes, budget_s=max(0.1, deadline - time.monotonic()))
        final = program
        for n, step in enumerate(steps, start=1):
            if time.monotonic() > deadline:
                raise DojoError(f"replaying the steps takes longer than the budget "
                                f"({VALIDATE_BUDGET_S:g} s)", n, 1, "<steps>")
            try:
                final = replay(final, [step])
            except DojoError as exc:
                raise DojoError(f"step '{step}': {exc.message}", n, 1, "<steps>") from None
    except DojoError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("source: nested too deeply") from None
    return text, program.name, steps, sizes, program_hash(final), gpu_binds(final)



def submit_benchmark(source: str, steps=None, sizes=None, runner: str | None = None,
                     kernel: str | None = None, session_id=None, step_index=None,
                     options=None, max_attempts: int | None = None, submitter: str = "",
                     expect_hash: str | None = None, batch: str | None = None) -> Job:
    """Validate and queue a benchmark of ``source`` after ``steps`` at ``sizes`` on an
    online runner whose name or label is ``runner`` (None: any online runner).  The job's
    ``created`` is the time of the call, before validation.  Its kernel label is
    ``library_label`` of the source (``kernel`` is accepted for compatibility and never
    used as the label); ``submitter`` ("user:ID", "owner:HASH"; "" for the server itself)
    is who may cancel it.  Callers that attach it to a session (``session_id``,
    ``step_index``) have checked that the submitter owns that session; with
    ``expect_hash`` (that step's program hash) a job measuring another program is refused.

    ``batch`` names the jobs measured together (speedups divide medians of one batch on one
    runner, webapp/runners/results.py); None: a batch of its own.  A program with gpu binds
    is refused (GpuBindsRefused, a NoRunner) before anything is queued."""
    created = timezone.now()
    text, name, steps, sizes, phash, binds = validate(source, steps, sizes)
    if expect_hash is not None and phash != expect_hash:
        raise ValueError(f"the job's program (source, sizes and steps) is not the program of step "
                         f"{step_index} of session {session_id}")
    options = clean_options(options)
    if runner is not None and (not isinstance(runner, str) or not runner.strip()):
        raise ValueError("runner must be a runner name or label")
    runner = runner.strip() if runner else None
    if session_id is not None:
        session_id = str(session_id)[:64]
    if step_index is not None and (isinstance(step_index, bool) or not isinstance(step_index, int)):
        raise ValueError("step_index must be an integer")
    if batch is not None and (not isinstance(batch, str) or not NAME_RE.match(batch)):
        raise ValueError("batch: 1-64 letters, digits, '_', '.', '-'")
    batch = batch or f"b-{secrets.token_hex(8)}"
    with transaction.atomic():
        target = pick_runner(runner)
        refuse_gpu_binds(binds, target, step_index)
        if target is None:
            online = sorted(r.name for r in online_runners())
            if not runner:
                raise NoRunner("no runner is online")
            raise NoRunner(f"no online runner matches {runner!r} ("
                           + (f"online: {', '.join(online)})" if online else "no runner is online)"))
        job = Job(source=text, steps=steps, sizes=sizes, kernel=library_label(name, text)[:100],
                  options=options, work=library_work(name, text, sizes), runner=target, requested_runner=runner,
                  max_attempts=max_attempts or int(setting("DOJO_JOB_MAX_ATTEMPTS", 3)),
                  session_id=session_id, step_index=step_index, created=created,
                  dispatched=timezone.now(), submitter=str(submitter or "")[:80], program_hash=phash,
                  batch=batch)
        job.log("queued", runner=target.name)
        job.save()
        after_commit(job, send=True)
    return job


def cancel(job: Job) -> Job:
    """Cancel a queued or running job (a running one is killed on the runner's next
    heartbeat); a finished job is returned unchanged."""
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related("runner").get(id=job.id)
        if job.state in Job.ACTIVE:
            job.state = Job.CANCELLED
            job.finished = timezone.now()
            job.result = {**(job.result or {}), "error": "cancelled"}
            job.log("cancelled")
            job.save()
            after_commit(job)
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
        after_commit(job)
        return job
    target = pick_runner(job.requested_runner)
    job.state = Job.QUEUED
    job.runner = target
    job.started = job.heartbeat = None
    job.dispatched = now if target is not None else None
    job.log("requeued", runner=old, to=target.name if target else None, reason=reason)
    job.save()
    after_commit(job, send=target is not None)
    return job


def reassign(job: Job, reason: str, target: Runner | None = None) -> Job:
    """A queued job whose runner went away (or, with ``target``, that an idle runner takes
    over): give it to ``target`` or another matching online runner (or none yet).  Attempts
    are not counted: the job never started.  Its old message, if it still arrives, is
    refused at the claim (the job is no longer that runner's)."""
    target = target if target is not None else pick_runner(job.requested_runner)
    if (target.id if target is not None else None) == job.runner_id:
        return job                               # no change (e.g. still no runner)
    old = job.runner.name if job.runner_id else None
    job.runner = target
    job.dispatched = timezone.now() if target is not None else None
    job.log("reassigned", runner=old, to=target.name if target else None, reason=reason)
    job.save()
    after_commit(job, send=target is not None)
    return job


def redispatch(job: Job, reason: str) -> None:
    job.log("redispatched", runner=job.runner.name if job.runner_id else None, reason=reason)
    job.dispatched = timezone.now()
    job.save(update_fields=["events", "dispatched"])
    after_commit(job, send=True)


def job_spec(job: Job) -> dict:
    return {"id": job.id, "source": job.source, "steps": list(job.steps or []),
            "sizes": job.sizes or {}, "kernel": job.kernel, "options": job.options or {},
            "attempts": job.attempts, "max_attempts": job.max_attempts}


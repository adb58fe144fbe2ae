"""Benchmark jobs submitted and cancelled through the JSON API: who may, and what a job
may claim.  The views (job_views.py) are thin; the runners app queues and runs jobs.

Guarantees:

* A job is submitted by a signed-in user (an API token, or the browser's session with
  its CSRF token) or by the holder of a live owner token (one that some session was
  created with); anything else is refused with 401.  The job records its submitter
  (``user:ID`` or ``owner:SHA256``), never shown.
* Its kernel label is derived from its source (``services.library_label``); a
  ``kernel`` field only names a library kernel to load when no source is sent.
* A job attaches to a history step (``session_id`` + ``step_index``) only when its
  submitter owns that session (403), and only when the program it measures is that
  step's program, sizes included (400): both are checked before anything is queued.
* Quotas: at most DOJO_JOB_QUOTA_ACTIVE queued or running jobs per submitter (and per
  session for a step's benchmarks); over it a 429 with Retry-After.
* Only the submitter, or whoever may edit the session the job is attached to, cancels
  it (403 otherwise; 401 with no credentials).
* ``submit_step`` (the editor's Benchmark button and POST /api/sessions/ID/steps/N/benchmark)
  queues a step of a history for its owner only (403), after the step still replays (409);
  503 when benchmarking is not available, 409 when no online runner matches or the step
  binds loops to the GPU (runners time C code, where the binds do nothing; the reason says
  so), 400 for any other bad request, 429 over the session's quota.  It returns the job's dict.
"""
from __future__ import annotations

from django.conf import settings

from dojo_core import canonical, kernels, text_hash
from webapp.histories import integration
from webapp.histories import services as histories
from webapp.histories.models import Session
from webapp.refusal import Refusal
from webapp.runners import services as runners
from webapp.runners.models import Job

FIELDS = {"source", "steps", "sizes", "runner", "kernel", "session_id", "step_index", "options"}
NEEDS_TOKEN = ("submitting a job needs 'Authorization: Token <API token or owner token>' "
               "(or a signed-in browser session)")


def _quota() -> int:
    return int(getattr(settings, "DOJO_JOB_QUOTA_ACTIVE", 20))


def submitter_of(actor, strict: bool = True) -> str:
    """``user:ID`` or ``owner:SHA256`` of an actor; "" when it has neither (strict: 401)."""
    if actor.user_id is not None:
        return f"user:{actor.user_id}"
    if actor.token:
        digest = histories.digest(actor.token)
        if Session.objects.filter(owner_token_hash=digest).exists():
            return f"owner:{digest}"
        if strict:
            raise Refusal(401, "unknown owner token")
        return ""
    if strict:
        raise Refusal(401, NEEDS_TOKEN)
    return ""


def check_quota(**active_filter) -> None:
    """429 (with Retry-After) when the jobs matching ``active_filter`` already fill the quota."""
    limit = _quota()
    active = Job.objects.filter(state__in=Job.ACTIVE, **active_filter).count()
    if active >= limit:
        raise Refusal(429, f"too many jobs queued or running ({active}, limit {limit}); "
                           "wait for some to finish", retry_after=30)


def _source_of(data: dict) -> str:
    kernel, source = data.get("kernel"), data.get("source")
    if kernel is not None and not isinstance(kernel, str):
        raise Refusal(400, "kernel must be the name of a library kernel")
    if source is None and isinstance(kernel, str):
        try:
            return kernels.kernel_path(kernel).read_text()
        except (KeyError, OSError, ValueError):
            raise Refusal(400, f"unknown library kernel {kernel!r}") from None
    if not isinstance(source, str):
        raise Refusal(400, "source: the kernel's IR text is required (or a library kernel name)")
    return source


def _step_claim(data: dict, actor):
    """(session id, step index, expected program hash) of the step a job claims, or Nones."""
    sid, index = data.get("session_id"), data.get("step_index")
    if sid is None and index is None:
        return None, None, None
    if sid is None or index is None:
        raise Refusal(400, "session_id and step_index go together")
    if not isinstance(sid, str):
        raise Refusal(400, "session_id must be a session id")
    if isinstance(index, bool) or not isinstance(index, int):
        raise Refusal(400, "step_index must be an integer")
    session = histories.get_session(sid)
    if not histories.can_edit(session, actor):
        raise Refusal(403, f"a job can be attached only to a session you own; {sid} is not yours")
    step = histories.get_step(session, index, what="step_index")
    return session.id, step.index, text_hash(step.ir)


def submit(actor, data: dict) -> Job:
    """Queue a job for ``actor`` from a POST /api/jobs body; Refusal otherwise."""
    unknown = set(data) - FIELDS
    if unknown:
        raise Refusal(400, f"unknown field(s): {', '.join(sorted(unknown))}")
    submitter = submitter_of(actor)
    source = _source_of(data)
    sid, index, expect = _step_claim(data, actor)
    check_quota(submitter=submitter)
    try:
        job = runners.submit_benchmark(source, data.get("steps"), data.get("sizes"),
                                       runner=data.get("runner"), session_id=sid, step_index=index,
                                       options=data.get("options"), submitter=submitter,
                                       expect_hash=expect)
    except runners.NoRunner as exc:
        raise Refusal(409, str(exc)) from None
    except ValueError as exc:
        raise Refusal(400, str(exc)) from None
    return job


def may_cancel(actor, job: Job) -> bool:
    mine = submitter_of(actor, strict=False)
    if job.submitter and mine and mine == job.submitter:
        return True
    if job.session_id:
        session = Session.objects.filter(id=job.session_id).first()
        if session is not None and histories.can_edit(session, actor):
            return True
    return False


def cancel(actor, job_id: int) -> Job:
    job = Job.objects.filter(id=job_id).first()
    if job is None:
        raise Refusal(404, f"no job {job_id}")
    if not may_cancel(actor, job):
        if actor.user_id is None and not actor.token and not actor.owned and not actor.session_key:
            raise Refusal(401, "cancelling a job needs 'Authorization: Token ...' of its submitter")
        raise Refusal(403, f"only the submitter of job {job_id} (or the owner of its session) can cancel it")
    return runners.cancel(job)


def submit_step(session, actor, index, runner, options=None, batch: str | None = None,
                baseline: bool | None = None) -> dict:
    """Benchmark step ``index`` of ``session`` on ``runner`` (a name or label; None: any).

    ``batch`` groups the jobs of one agent run; None: the job is a batch of its own.
    ``baseline`` (default: a job of its own batch that is not the root) times the root in
    the same job, so that its speedup divides two medians of one run on one runner."""
    histories.require_owner(session, actor)
    steps = histories.steps_of(session)
    step = histories.get_step(session, index, steps)
    histories.program_at(session, step.index, steps)        # must still replay
    texts = list(histories.path_texts(steps, step.index))
    if not integration.available():
        raise Refusal(503, integration.NOT_AVAILABLE)
    check_quota(session_id=session.id)
    source = _library_source(session) or session.source
    if baseline is None:
        baseline = batch is None
    if baseline and step.index != 0 and texts:
        options = {**(options or {}), "baseline": True}
    try:
        return integration.submit(source, texts, session.sizes, runner or None,
                                  session.kernel, session.id, step.index, options, batch=batch)
    except integration.Unavailable as exc:
        raise Refusal(503, str(exc)) from None
    except runners.NoRunner as exc:
        raise Refusal(409, str(exc)) from None
    except ValueError as exc:
        raise Refusal(400, str(exc)) from None


def _library_source(session):
    """The library kernel's own text when the session's root is that kernel at its sizes
    (the runners then know its flop count), else None."""
    if not session.kernel:
        return None
    try:
        if canonical(kernels.load_kernel(session.kernel, session.sizes)) == session.source:
            return canonical(kernels.load_kernel(session.kernel))
    except Exception:                                    # noqa: BLE001 - optional
        return None
    return None

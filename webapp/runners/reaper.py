"""The reaper: nothing is lost when a runner dies or a message goes astray.

``reap_once()`` makes one pass (each change in its own transaction, on a locked
row whose state is checked again):

1. a running job whose runner is offline (no heartbeat for
   DOJO_RUNNER_OFFLINE_AFTER seconds), disabled or gone, or whose runner is alive
   but has not named it in its heartbeats for as long, is requeued on a
   matching online runner, or marked lost once it has used max_attempts;
2. a queued job waiting on an offline runner is given to another matching one;
3. a queued job with no runner gets one as soon as a matching runner is online;
4. a queued job that was never published (the broker was down), or that waits
   on an idle runner for DOJO_REDISPATCH_AFTER seconds (its message was lost),
   is published again (a duplicate is harmless: claims are atomic);
5. a queued job that no runner took within DOJO_JOB_PENDING_TIMEOUT is lost;
6. an idle online runner (nothing running, nothing queued for it) takes over the oldest
   queued job waiting behind a busy runner that it matches: a runner that rejoins or
   comes up later shares the queue instead of watching the other run it all.

Row locks are ``FOR UPDATE OF`` the job row alone (PostgreSQL refuses to lock the
nullable side of the job's outer join to its runner).

Run it with ``manage.py reap_jobs [--loop]``; the ASGI app also runs it every
DOJO_REAPER_INTERVAL seconds in the web process (``webapp.runners.background``).
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import services
from .models import Job, Runner, offline_after

log = logging.getLogger(__name__)


def _locked(job_id: int, state: str):
    return (Job.objects.select_for_update(of=("self",)).select_related("runner")
            .filter(id=job_id, state=state).first())


def reap_once(now=None) -> dict:
    now = now or timezone.now()
    stale = now - offline_after()
    counts = {"requeued": 0, "lost": 0, "reassigned": 0, "assigned": 0, "redispatched": 0,
              "expired": 0, "rebalanced": 0}
    dead = Q(runner__isnull=True) | Q(runner__enabled=False) | Q(runner__last_heartbeat__isnull=True) \
        | Q(runner__last_heartbeat__lt=stale)

    # 1. running jobs of dead runners, or that their runner no longer reports
    for job_id in Job.objects.filter(state=Job.RUNNING).filter(dead | Q(heartbeat__lt=stale)) \
            .values_list("id", flat=True):
        with transaction.atomic():
            job = _locked(job_id, Job.RUNNING)
            if job is None:
                continue
            r = job.runner
            if r is None:
                why = "its runner was removed"
            elif not r.online:
                why = f"runner {r.name} stopped heartbeating"
            elif job.heartbeat is None or job.heartbeat < stale:
                why = f"runner {r.name} no longer reports it"
            else:
                continue
            if r is not None and r.current_job_id == job.id:
                Runner.objects.filter(id=r.id).update(current_job_id=None)
            services.requeue_or_lose(job, why)
            counts["lost" if job.state == Job.LOST else "requeued"] += 1

    # 2. queued on a dead runner -> another runner
    for job_id in Job.objects.filter(state=Job.QUEUED, runner__isnull=False).filter(dead) \
            .values_list("id", flat=True):
        with transaction.atomic():
            job = _locked(job_id, Job.QUEUED)
            if job is not None and job.runner_id and not job.runner.online:
                before = job.runner_id
                services.reassign(job, f"runner {job.runner.name} is offline")
                counts["reassigned"] += job.runner_id != before

    # 3. queued with no runner -> a runner, once one matches
    for job_id in Job.objects.filter(state=Job.QUEUED, runner__isnull=True).values_list("id", flat=True):
        with transaction.atomic():
            job = _locked(job_id, Job.QUEUED)
            if job is not None and job.runner_id is None:
                services.reassign(job, "a matching runner is online")
                counts["assigned"] += job.runner_id is not None

    # 4. queued but never published, or the message was lost
    redispatch_after = timedelta(seconds=float(getattr(settings, "DOJO_REDISPATCH_AFTER", 30)))
    never = Q(dispatched__isnull=True, created__lt=now - timedelta(seconds=2))
    astray = Q(dispatched__lt=now - redispatch_after, runner__current_job_id__isnull=True)
    for job_id in Job.objects.filter(state=Job.QUEUED, runner__isnull=False,
                                     runner__last_heartbeat__gte=stale).filter(never | astray) \
            .values_list("id", flat=True):
        with transaction.atomic():
            job = _locked(job_id, Job.QUEUED)
            if job is not None and job.runner_id:
                services.redispatch(job, "never published" if job.dispatched is None
                                    else "not picked up by an idle runner")
                counts["redispatched"] += 1

    # 5. nobody took it for too long
    pending = timedelta(seconds=float(getattr(settings, "DOJO_JOB_PENDING_TIMEOUT", 86400)))
    for job_id in Job.objects.filter(state=Job.QUEUED, created__lt=now - pending) \
            .values_list("id", flat=True):
        with transaction.atomic():
            job = _locked(job_id, Job.QUEUED)
            if job is not None:
                job.state, job.finished = Job.LOST, now
                job.result = {"error": f"lost: no runner took it within {pending.total_seconds():g} s"}
                job.log("lost", reason="pending timeout")
                job.save()
                services.after_commit(job)
                counts["expired"] += 1
    counts["rebalanced"] = rebalance()
    if any(counts.values()):
        log.info("reaper: %s", counts)
    return counts


def rebalance(limit: int = 50) -> int:
    """Step 6 of reap_once: each idle runner takes one job queued behind a busy runner."""
    moved = 0
    active = set(Job.objects.filter(state__in=Job.ACTIVE, runner__isnull=False)
                 .values_list("runner_id", flat=True))
    idle = [r for r in services.online_runners() if r.current_job_id is None and r.id not in active]
    if not idle:
        return 0
    waiting = list(Job.objects.filter(state=Job.QUEUED, runner__isnull=False,
                                      runner__current_job_id__isnull=False)
                   .order_by("id").values_list("id", flat=True)[:limit])
    for runner in idle:
        for job_id in waiting:
            with transaction.atomic():
                job = _locked(job_id, Job.QUEUED)
                if job is None or job.runner_id == runner.id or not runner.matches(job.requested_runner):
                    continue
                if job.runner is None or job.runner.current_job_id is None:
                    continue                        # its own runner is free to take it now
                services.reassign(job, f"runner {runner.name} is idle", target=runner)
            waiting.remove(job_id)
            moved += 1
            break
    return moved

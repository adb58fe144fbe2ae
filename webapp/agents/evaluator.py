"""The evaluator of agent runs: a state is measured by making it a step of the history.

``HistoryEvaluator(run)`` keeps dojo_core's Evaluator contract (agents/base.py).  For a
state (steps from the run's start step) it

1. adds the path to the session with ``histories.services.add_step`` from the start step
   (an existing child is reused, so shared prefixes are shared steps and a new branch is
   an ordinary branch of the tree), announcing new steps to the open page at once;
2. submits a benchmark job of that step on the run's runner (name, label or any), as the
   editor's Run button does, in the batch ``agent-RUN`` (its speedups divide medians of that
   batch: the root is its first state, or is timed inside its first job when it starts
   elsewhere);
3. waits for the job in the database (polled every ``poll_s``; the job's own timeout,
   attempts and the reaper decide how long), and turns its result into a ``Measurement``.

``evaluate_many`` submits every job first and then waits, so several runners measure in
parallel.  Guarantees: never more than ``run.budget`` jobs (a request beyond the budget
is answered "budget exhausted" without a job); a state measured before in this run is
answered from memory (``source="cache"``, no job); a stop request cancels the jobs still
pending (their measurement says "stopped").  Refusals (no runner online, history full)
become failed measurements, never exceptions.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional, Sequence

from dojo_core.agents import Measurement
from webapp.api.jobs import submit_step
from webapp.histories import services as histories
from webapp.histories.services import Actor
from webapp.refusal import Refusal
from webapp.runners.models import Job
from webapp.runners.services import cancel

FINAL_STATES = ("done", "failed", "lost", "cancelled")


class HistoryEvaluator:
    def __init__(self, run, poll_s: float = 0.2, stop_requested: Optional[Callable[[], bool]] = None,
                 on_new_steps: Optional[Callable[[], None]] = None):
        self.run = run
        self.session = run.session
        owner = self.session.owner if self.session.owner_id else None
        self.actor = Actor(user=owner, owned=frozenset({self.session.id}))      # acting for the owner
        self.fingerprint = f"perfdojo-runner:{run.runner or 'any'}"
        self.poll_s = poll_s
        self.stop_requested = stop_requested or (lambda: False)
        self.on_new_steps = on_new_steps or (lambda: None)
        self.jobs_submitted = 0
        self.index_of: dict = {(): run.start_step}       # steps tuple -> step index
        self.job_of: dict = {}                           # steps tuple -> job id
        self.memo: dict = {}                             # steps tuple -> Measurement

    # ------------------------------------------------------------------ the contract
    def evaluate(self, program, steps: tuple) -> Measurement:
        return self.evaluate_many([(program, steps)])[0]

    def evaluate_many(self, items: Sequence[tuple]) -> list:
        answers: list = [None] * len(items)
        pending = {}                                     # job id -> (positions, steps)
        for pos, (_program, steps) in enumerate(items):
            steps = tuple(steps)
            if steps in self.memo:
                answers[pos] = dataclasses.replace(self.memo[steps], source="cache")
                continue
            waiting = next((jid for jid, (_, s) in pending.items() if s == steps), None)
            if waiting is not None:
                pending[waiting][0].append(pos)
                continue
            if self.jobs_submitted >= self.run.budget:
                answers[pos] = Measurement(None, verified=False, error="budget exhausted",
                                           runner=self.run.runner or "any")
                continue
            job_id, failure = self._submit(steps)
            if failure is not None:
                answers[pos] = failure
                continue
            pending[job_id] = ([pos], steps)
        for job_id, measurement in self._wait(list(pending)).items():
            positions, steps = pending[job_id]
            if measurement.error != "stopped":
                self.memo[steps] = measurement
            for pos in positions:
                answers[pos] = measurement
        return answers

    # ------------------------------------------------------------------ steps and jobs
    def step_index(self, steps: tuple) -> int:
        """The history step of a state, adding the missing steps of its path."""
        steps = tuple(steps)
        if steps in self.index_of:
            return self.index_of[steps]
        parent = self.step_index(steps[:-1])
        step, created = histories.add_step(self.session, self.actor, parent, steps[-1])
        self.index_of[steps] = step.index
        if created:
            self.on_new_steps()
        return step.index

    def _submit(self, steps: tuple):
        """(job id, None) or (None, a failed Measurement with the refusal's reason)."""
        runner = self.run.runner or "any"
        try:
            index = self.step_index(steps)
            first_off_root = self.jobs_submitted == 0 and self.run.start_step != 0
            job = submit_step(self.session, self.actor, index, self.run.runner or None,
                              self.run.job_options or None, batch=f"agent-{self.run.id}",
                              baseline=first_off_root)
        except Refusal as r:
            return None, Measurement(None, verified=False, error=r.reason, runner=runner)
        self.jobs_submitted += 1
        self.job_of[steps] = job["id"]
        return job["id"], None

    def _wait(self, job_ids: list) -> dict:
        out = {}
        left = set(job_ids)
        while left:
            for job in Job.objects.select_related("runner").filter(id__in=left, state__in=FINAL_STATES):
                out[job.id] = measurement_of(job)
                left.discard(job.id)
            if not left:
                break
            if self.stop_requested():
                for job in Job.objects.filter(id__in=left):
                    cancel(job)
                    out[job.id] = Measurement(None, verified=False, error="stopped",
                                              runner=self.run.runner or "any")
                break
            time.sleep(self.poll_s)
        return out


def measurement_of(job) -> Measurement:
    """The Measurement of a finished job."""
    result = job.result if isinstance(job.result, dict) else {}
    runner = (job.runner.name if job.runner_id else None) or result.get("runner") or "any"
    if job.state == "done":
        median = result.get("median_s")
        ok = isinstance(median, (int, float)) and not isinstance(median, bool) and median > 0
        verified = result.get("verified", True) is True
        return Measurement(float(median) if ok and verified else None, verified=verified,
                           error=result.get("error") or (None if ok else "no median in the result"),
                           min_s=_num(result.get("min_s")), max_s=_num(result.get("max_s")), runner=str(runner))
    return Measurement(None, verified=False, error=result.get("error") or job.state, runner=str(runner))


def _num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

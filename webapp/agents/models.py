"""Agent runs.

States::

    queued  -> running -> done | stopped | failed
    queued  -> stopped            stop before the worker took it
    queued  -> failed             the task could not be handed to the broker

``stop_requested`` is set by the stop button or ``POST /api/agents/RUN/stop``; the
agent's ``should_stop`` polls it between measurements.  ``done``, ``stopped`` and
``failed`` are final.  Progress (``measurements``, ``best_step``, ``best_median_s``)
is written after every measurement.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone


class AgentRun(models.Model):
    QUEUED, RUNNING, DONE, STOPPED, FAILED = "queued", "running", "done", "stopped", "failed"
    STATES = [(s, s) for s in (QUEUED, RUNNING, DONE, STOPPED, FAILED)]
    ACTIVE = (QUEUED, RUNNING)

    session = models.ForeignKey("histories.Session", on_delete=models.CASCADE, related_name="agent_runs")
    start_step = models.IntegerField(default=0, help_text="the step the agent starts from (its root)")
    agent = models.CharField(max_length=64)
    budget = models.PositiveIntegerField(help_text="measurements, the baseline included")
    runner = models.CharField(max_length=64, blank=True, default="", help_text="name or label; empty: any")
    seed = models.IntegerField(default=0)
    job_options = models.JSONField(default=dict, blank=True, help_text="benchmark options of every job")
    state = models.CharField(max_length=16, choices=STATES, default=QUEUED, db_index=True)
    stop_requested = models.BooleanField(default=False)
    created = models.DateTimeField(default=timezone.now)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    measurements = models.PositiveIntegerField(default=0)
    trials = models.JSONField(default=list, blank=True,
                              help_text="[{step, job, depth, median_s, verified, error, source}] in order")
    best_step = models.IntegerField(null=True, blank=True)
    best_median_s = models.FloatField(null=True, blank=True)
    baseline_median_s = models.FloatField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, default="", help_text="host:pid of the worker")

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"agent run {self.id}: {self.agent} on {self.session_id} ({self.state})"

    @classmethod
    def latest(cls, session, limit: int = 5) -> list:
        """The newest ``limit`` runs on ``session``, newest first."""
        return list(cls.objects.filter(session=session).order_by("-id")[:limit])

    @property
    def final(self) -> bool:
        return self.state not in self.ACTIVE

    @property
    def speedup(self):
        if self.baseline_median_s and self.best_median_s:
            return self.baseline_median_s / self.best_median_s
        return None

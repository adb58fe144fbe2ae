"""Runners, registration tokens and benchmark jobs.

Job states and the transitions the services allow (anything else is refused):

    queued  -> running      a runner claims it (attempts += 1)
    queued  -> cancelled    cancel
    queued  -> queued       reassigned to another runner (its runner went offline)
    queued  -> lost         no runner can take it and it has used its attempts
    running -> done         the runner reports a verified measurement
    running -> failed       the runner reports an error (compile, timeout, crash, mismatch)
    running -> queued       the runner died or handed it back, attempts < max_attempts
    running -> lost         ... and attempts == max_attempts
    running -> cancelled    cancel (the runner is told on its next heartbeat)

done, failed, lost and cancelled are final.
"""
from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def offline_after() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "DOJO_RUNNER_OFFLINE_AFTER", 15)))


class RegistrationToken(models.Model):
    """A token a runner presents once to register. Only its hash is stored."""
    token_hash = models.CharField(max_length=64, unique=True)
    note = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    uses_left = models.PositiveIntegerField(null=True, blank=True, help_text="empty: unlimited")
    revoked = models.BooleanField(default=False)
    last_used = models.DateTimeField(null=True, blank=True)
    replaces = models.CharField(max_length=64, blank=True, default="",
                                help_text="the one registered runner name this token may take over")

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return f"token {self.token_hash[:8]}… {self.note}".strip()

    @staticmethod
    def new_raw() -> str:
        return "pdt_" + secrets.token_urlsafe(24)

    @classmethod
    def issue(cls, note: str = "", uses: int | None = 1, expires_in: timedelta | None = None,
              replaces: str = ""):
        """(token, raw text): the raw text is shown once and never stored.  A token
        registers new runner names only, except the one name it ``replaces``."""
        raw = cls.new_raw()
        token = cls.objects.create(token_hash=digest(raw), note=note, uses_left=uses, replaces=replaces,
                                   expires_at=timezone.now() + expires_in if expires_in else None)
        return token, raw

    def usable(self, now=None) -> tuple[bool, str]:
        now = now or timezone.now()
        if self.revoked:
            return False, "registration token revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return False, "registration token expired"
        if self.uses_left is not None and self.uses_left <= 0:
            return False, "registration token used up"
        return True, ""


class Runner(models.Model):
    name = models.CharField(max_length=64, unique=True)
    secret_hash = models.CharField(max_length=64, unique=True)
    labels = models.JSONField(default=list, blank=True)
    hardware = models.JSONField(default=dict, blank=True)
    sandbox = models.JSONField(default=dict, blank=True)
    peaks = models.JSONField(default=dict, blank=True,
                             help_text="measured by the runner at registration (runners/peaks.py): "
                                       "f32 FMA gflops, STREAM triad gbytes_per_s, threads")
    queue = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True, help_text="a disabled runner is refused (403)")
    registered = models.DateTimeField(default=timezone.now)
    last_heartbeat = models.DateTimeField(null=True, blank=True)
    current_job_id = models.BigIntegerField(null=True, blank=True)
    token = models.ForeignKey(RegistrationToken, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def online(self) -> bool:
        return (self.enabled and self.last_heartbeat is not None
                and timezone.now() - self.last_heartbeat <= offline_after())

    @property
    def status(self) -> str:
        if not self.enabled:
            return "disabled"
        if not self.online:
            return "offline"
        return "busy" if self.current_job_id else "idle"

    def matches(self, wanted: str | None) -> bool:
        """By name or label; "any" (no wanted) never picks an emulated runner, which checks
        correctness but gives no times (runners/hardware.py: emulated_fingerprint)."""
        if not wanted:
            return not (self.hardware or {}).get("emulated")
        return wanted == self.name or wanted in (self.labels or [])

    def set_secret(self) -> str:
        raw = "pds_" + secrets.token_urlsafe(32)
        self.secret_hash = digest(raw)
        return raw


class Job(models.Model):
    QUEUED, RUNNING, DONE, FAILED, LOST, CANCELLED = "queued", "running", "done", "failed", "lost", "cancelled"
    STATES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED, LOST, CANCELLED)]
    FINAL = (DONE, FAILED, LOST, CANCELLED)
    ACTIVE = (QUEUED, RUNNING)

    state = models.CharField(max_length=16, choices=STATES, default=QUEUED, db_index=True)
    source = models.TextField(help_text="canonical IR of the untransformed kernel")
    steps = models.JSONField(default=list, blank=True)
    sizes = models.JSONField(default=dict, blank=True)
    kernel = models.CharField(max_length=100, blank=True, default="")
    options = models.JSONField(default=dict, blank=True)
    work = models.JSONField(default=dict, blank=True,
                            help_text="flops and bytes of a library kernel at these sizes")
    runner = models.ForeignKey(Runner, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="jobs")
    requested_runner = models.CharField(max_length=64, null=True, blank=True,
                                        help_text="a runner name or label; empty: any online runner")
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=3)
    created = models.DateTimeField(default=timezone.now, db_index=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    dispatched = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    events = models.JSONField(default=list, blank=True)
    session_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    step_index = models.IntegerField(null=True, blank=True)
    submitter = models.CharField(max_length=80, blank=True, default="", db_index=True,
                                 help_text="who submitted it: user:ID, owner:HASH; empty: the server")
    program_hash = models.CharField(max_length=64, blank=True, default="",
                                    help_text="sha256 of the canonical IR it measures (after its steps)")
    batch = models.CharField(max_length=64, blank=True, default="", db_index=True,
                             help_text="the jobs measured together (one benchmark request, one agent "
                                       "run): speedups divide medians of one batch on one runner")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["session_id", "step_index"])]

    def __str__(self):
        return f"job {self.id} ({self.kernel or 'kernel'}, {self.state})"

    @property
    def final(self) -> bool:
        return self.state in self.FINAL

    def log(self, event: str, **detail) -> None:
        entry = {"at": timezone.now().isoformat(timespec="milliseconds"), "event": event}
        entry.update({k: v for k, v in detail.items() if v is not None})
        self.events = (list(self.events or []) + [entry])[-50:]

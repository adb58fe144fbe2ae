"""Optimization histories.

A ``Session`` is one history: a root kernel (its canonical IR text, ``source``) and a
tree of ``Step`` rows.  Step 0 is the root (empty ``text``, ``ir == source``); every
other step names its ``parent`` step and the action ``text`` applied to it, and stores
the canonical IR after it.  The stored IR is for display only: legality is always
decided by replaying the path from the root with dojo_core (services.py).

Ownership: a signed-in ``owner``, or (anonymous sessions) the browser session that
created it (``owner_key``, plus the id list kept in that browser session) and the
owner token returned to API clients (only its SHA-256 is stored).
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Session(models.Model):
    id = models.CharField(primary_key=True, max_length=16)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="dojo_sessions")
    owner_key = models.CharField(max_length=64, blank=True, default="",
                                 help_text="Django session key of an anonymous creator")
    owner_token_hash = models.CharField(max_length=64, blank=True, default="",
                                        help_text="sha256 of the anonymous owner token")
    kernel = models.CharField(max_length=100, blank=True, default="")
    title = models.CharField(max_length=200, blank=True, default="")
    source = models.TextField(help_text="canonical IR of the root")
    sizes = models.JSONField(default=dict, blank=True)
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="forks")
    forked_at = models.IntegerField(null=True, blank=True)
    engine_version = models.CharField(max_length=64, blank=True, default="")
    current = models.IntegerField(default=0, help_text="index of the current step")
    created = models.DateTimeField(default=timezone.now, db_index=True)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return f"session {self.id} ({self.kernel or 'custom kernel'})"

    @property
    def url(self) -> str:
        return f"/s/{self.id}/"

    @property
    def name(self) -> str:
        return self.title or self.kernel or "custom kernel"


class Step(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="steps")
    index = models.IntegerField()
    parent = models.IntegerField(null=True, blank=True)
    text = models.CharField(max_length=300, blank=True, default="")
    ir = models.TextField()
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "index"]
        constraints = [models.UniqueConstraint(fields=["session", "index"], name="unique_step_index")]

    def __str__(self):
        return f"{self.session_id}#{self.index} {self.text or '(root)'}"

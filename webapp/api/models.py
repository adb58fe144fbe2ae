"""Per-user API tokens: ``Authorization: Token <raw>``.  Only the SHA-256 of a token is
stored; the raw text is shown once when it is made (``ApiToken.issue``)."""
from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="the first characters, to tell tokens apart")
    note = models.CharField(max_length=100, blank=True, default="")
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return f"{self.prefix}… ({self.user})"

    @classmethod
    def issue(cls, user, note: str = ""):
        """(token, raw text); the raw text is never stored."""
        raw = "pdk_" + secrets.token_urlsafe(30)
        token = cls.objects.create(user=user, token_hash=token_digest(raw), prefix=raw[:10], note=note[:100])
        return token, raw

    @classmethod
    def user_for(cls, raw: str):
        """The user of a live token, or None."""
        token = cls.objects.select_related("user").filter(token_hash=token_digest(raw), revoked=False).first()
        if token is None or not token.user.is_active:
            return None
        cls.objects.filter(id=token.id).update(last_used=timezone.now())
        return token.user

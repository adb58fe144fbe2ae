"""Job tickets: the claim the server puts in a runner's task message (no Django here).

A ticket is ``{"job": spec, "attempt": N, "runner": NAME}``: what the runner needs to
start the job at once (the canonical IR, steps, sizes, options) and the attempt it
may claim.  The server signs it with HMAC-SHA256 under a key derived from the
runner's secret (``dispatch_key``: the server keeps only the secret's SHA-256, the
runner derives the same key from the secret itself), so a message that anyone else
put on the broker, or that was altered there, is refused by the runner before it
runs anything.  The claim itself stays on the server: it is atomic and refuses a
stale attempt, another runner's job or a job already finished (protocol.claim).
"""
from __future__ import annotations

import hashlib
import hmac
import json

CONTEXT = b"perfdojo-dispatch-v1"


def dispatch_key(secret_hash: str) -> bytes:
    """The signing key from the SHA-256 hex digest of the runner's secret."""
    return hmac.new(secret_hash.encode(), CONTEXT, hashlib.sha256).digest()


def key_from_secret(secret: str) -> bytes:
    return dispatch_key(hashlib.sha256(secret.encode()).hexdigest())


def _canonical(ticket: dict) -> bytes:
    return json.dumps(ticket, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sign(key: bytes, ticket: dict) -> str:
    return hmac.new(key, _canonical(ticket), hashlib.sha256).hexdigest()


def verify(key: bytes, ticket, signature) -> bool:
    """True when ``signature`` is this key's signature of ``ticket`` (a well-formed one)."""
    if not isinstance(ticket, dict) or not isinstance(signature, str):
        return False
    job = ticket.get("job")
    attempt = ticket.get("attempt")
    if not isinstance(job, dict) or isinstance(attempt, bool) or not isinstance(attempt, int):
        return False
    try:
        expected = sign(key, ticket)
    except (TypeError, ValueError):
        return False
    return hmac.compare_digest(expected, signature)


def duplicate_reason(job: dict | None, attempt, runner: str) -> str | None:
    """Why a delivered ticket for ``attempt`` must not start, from the server's view of the
    job (GET /api/jobs/ID), or None: it is final, it is another runner's, or it was
    already started at this attempt or past it (a duplicate or stale delivery)."""
    if not isinstance(job, dict):
        return None
    if job.get("final") or job.get("state") in ("done", "failed", "lost", "cancelled"):
        return f"job is {job.get('state')}"
    if job.get("runner") not in (None, runner):
        return f"job is now runner {job.get('runner')}'s"
    done = job.get("attempts")
    if isinstance(done, int) and isinstance(attempt, int) and attempt <= done:
        return f"attempt {attempt} was already started (the job is {job.get('state')} at attempt {done})"
    return None


"""``MeasurementCache(store, fingerprint)``: the (state_hash, fingerprint) -> Measurement map
backed by the record store.

And the records and failed Measurements both evaluators make (``measurement_record``,
``failed_measurement``, ``one_line``).
"""
from __future__ import annotations

import threading
from typing import Optional

from ..records import RecordStore, now_iso, program_hash
from .base import Measurement


class MeasurementCache:
    """Measurements by (state_hash, fingerprint), loaded from and appended to a RecordStore
    (None: in memory only)."""

    def __init__(self, store: Optional[RecordStore], fingerprint: str):
        self.store, self.fingerprint = store, fingerprint
        self._lock = threading.Lock()
        self._by_state: dict = {}
        if store is not None:
            for record in store:
                if record.get("fingerprint") == fingerprint and record.get("state_hash"):
                    self._by_state[record["state_hash"]] = record

    def lookup(self, state_hash: str) -> Optional[Measurement]:
        with self._lock:
            record = self._by_state.get(state_hash)
        if record is None:
            return None
        return Measurement(record.get("median_s"), bool(record.get("verified")),
                           record.get("error"), record.get("min_s"), record.get("max_s"),
                           source="cache", runner=record.get("runner") or "local")

    def add(self, record: dict) -> None:
        record = {**record, "fingerprint": self.fingerprint, "time": now_iso()}
        with self._lock:
            self._by_state[record["state_hash"]] = record
        if self.store is not None:
            self.store.append(record)


def measurement_record(root, steps, state_hash, m: Measurement, **extra) -> dict:
    """The record store's entry for measurement ``m`` of ``steps`` applied to ``root``."""
    return {"kernel": root.name, "sizes": dict(root.size_values),
            "source_hash": program_hash(root), "steps": list(steps), "state_hash": state_hash,
            "median_s": m.median_s, "min_s": m.min_s, "max_s": m.max_s,
            "verified": m.verified, "error": m.error, "runner": m.runner,
            "hardware": None, "agent": None, "history_url": None, **extra}


def failed_measurement(error: str, runner: str, verified: bool = True) -> Measurement:
    """A Measurement without a time, with ``error`` as its reason."""
    return Measurement(None, verified=verified, error=error, runner=runner)


def one_line(exc) -> str:
    """An exception as one line: its type and its first three non-blank lines."""
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return f"{type(exc).__name__}: " + (" | ".join(lines[:3]) or "(no message)")

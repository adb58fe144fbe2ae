"""Measurement records: one verified-or-not timing of one kernel state on one machine.

The common currency of the search agents (issue 7: their measurement cache and dataset),
the leaderboards and the library builder (issue 8).  A record is a plain JSON object:

    {"kernel": "matmul" | null,            library kernel name (null for pasted IR)
     "sizes": {"N": 512, ...},             the instantiated sizes
     "source_hash": "sha256 hex",          of the canonical root IR at those sizes
     "steps": ["split i by 32", ...],      from the root, in order
     "state_hash": "sha256 hex",           of the canonical IR after the steps
     "median_s": float | null, "min_s": ..., "max_s": ...,
     "verified": bool, "error": str | null,
     "fingerprint": "hex",                 hardware + toolchain key (machine_fingerprint())
     "runner": "local" | runner name,
     "hardware": {...} | null,             cpu model, cores, ... when known
     "compiler": "gcc ...", "flags": [...], "threads": int | null,
     "agent": str | null, "history_url": str | null,
     "time": ISO-8601 UTC}

``RecordStore(path)`` is an append-only JSON-lines file (default
``$DOJO_STATE_DIR/measurements.jsonl``, else ``~/.cache/perfdojo/measurements.jsonl``);
appends are single ``write`` calls of whole lines under ``O_APPEND``, so concurrent writers
never interleave within a line, and a truncated last line (a crash mid-write) is skipped on
reading, never an error.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Optional


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def program_hash(program) -> str:
    """sha256 of the canonical IR text of a program (sizes included: they are in the header)."""
    from .printer import print_program
    return text_hash(print_program(program))


@lru_cache(maxsize=1)
def machine_fingerprint() -> str:
    """A short stable key for this machine and toolchain: CPU model and ISA flags, core
    count, and the C compiler's version line (what decides the speed of generated code)."""
    from .compile import compiler_version, find_compiler
    model, flags = platform.processor(), ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model") and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = value.strip()
    except OSError:
        pass
    basis = json.dumps([model, sorted(flags.split()), os.cpu_count(), compiler_version(find_compiler())])
    return text_hash(basis)[:16]


def default_path() -> Path:
    state = os.environ.get("DOJO_STATE_DIR")
    base = Path(state) if state else Path.home() / ".cache" / "perfdojo"
    return base / "measurements.jsonl"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RecordStore:
    """An append-only JSON-lines file of measurement records."""

    def __init__(self, path: Optional[os.PathLike] = None):
        self.path = Path(path) if path is not None else default_path()

    def append(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def __iter__(self) -> Iterator[dict]:
        try:
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        continue            # a line cut short by a crash
                    if isinstance(record, dict):
                        yield record
        except FileNotFoundError:
            return

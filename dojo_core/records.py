"""Measurement records: one verified-or-not timing of one kernel state on one machine.

The common currency of the search agents (their measurement cache and dataset),
the leaderboards and the library builder.  A record is a plain JSON object:

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

Optional fields (readers must not require them): "target" (the C target ISA name the code
was generated for, codegen.targets), "labels" (the runner's labels, in records the web app
serves), "job" (the web app's job id), "replayed_from" (the fingerprint a replayed step
sequence was first measured on).

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

from .machine import ISA_FLAGS, cpu_info, gpus, isa_flags


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def program_hash(program) -> str:
    """sha256 of the canonical IR text of a program (sizes included: they are in the header)."""
    from .printer import print_program
    return text_hash(print_program(program))


_COMPILER_KEYS = ("cc", "gcc", "clang")


def fingerprint_of_hardware(hardware: dict) -> str:
    """The fingerprint of a hardware description in the format runners report
    (runners/hardware.py: cpu.model, cpu.arch, cpu.flags, cpu.logical_cpus, compilers, gpus):
    sha256 of the CPU model, architecture, ISA flags (of machine.ISA_FLAGS), logical CPU
    count, the C compiler's version line (``cc``, else ``gcc``, else ``clang``) and the GPU
    names, first 16 hex digits.  Missing parts count as empty, never an error."""
    hw = hardware if isinstance(hardware, dict) else {}
    cpu = hw.get("cpu") if isinstance(hw.get("cpu"), dict) else {}
    flags = sorted(set(cpu.get("flags") or ()) & set(ISA_FLAGS))
    compilers = hw.get("compilers") if isinstance(hw.get("compilers"), dict) else {}
    compiler = next((compilers[k] for k in _COMPILER_KEYS if compilers.get(k)), "")
    gpus = [g.get("name", "") if isinstance(g, dict) else str(g) for g in hw.get("gpus") or ()]
    basis = json.dumps([str(cpu.get("model") or ""), str(cpu.get("arch") or ""), flags,
                        cpu.get("logical_cpus"), compiler, sorted(gpus)])
    return text_hash(basis)[:16]


@lru_cache(maxsize=1)
def local_hardware() -> dict:
    """This machine's hardware in the runners' format, as far as the fingerprint needs it
    (CPU model, arch, ISA flags, logical CPUs, the C compiler, GPU names from nvidia-smi);
    the CPU as dojo_core.machine reads it, as the runners' report does."""
    from .compile import CompileError, compiler_version, find_compiler
    cpu = cpu_info()
    try:
        compilers = {"cc": compiler_version(find_compiler())}
    except CompileError:
        compilers = {}
    return {"cpu": {"model": cpu.model, "arch": platform.machine(), "flags": isa_flags(cpu),
                    "logical_cpus": os.cpu_count()},
            "compilers": compilers, "gpus": [{"name": g["name"]} for g in gpus()]}


@lru_cache(maxsize=1)
def machine_fingerprint() -> str:
    """A short stable key for this machine and toolchain (``fingerprint_of_hardware`` of
    ``local_hardware()``): equal to the fingerprint of a runner on this machine."""
    return fingerprint_of_hardware(local_hardware())


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


def bench_record(root, program, steps, timing: dict, verified: bool, compiler: str, flags,
                 target: str, kernel=None, **extra) -> dict:
    """A record of one local measurement (``harness.measure`` figures) of ``program``, the
    untransformed ``root`` after ``steps``, on this machine; ``extra`` adds or overrides
    fields (runner, agent, history_url, replayed_from, ...)."""
    record = {
        "kernel": kernel, "sizes": root.size_values, "source_hash": program_hash(root),
        "steps": list(steps), "state_hash": program_hash(program),
        "median_s": timing.get("median_s"), "min_s": timing.get("min_s"),
        "max_s": timing.get("max_s"), "verified": bool(verified), "error": None,
        "fingerprint": machine_fingerprint(), "runner": "local", "hardware": local_hardware(),
        "compiler": compiler, "flags": list(flags), "threads": timing.get("threads"),
        "agent": None, "history_url": None, "time": now_iso(), "target": target,
    }
    record.update(extra)
    return record

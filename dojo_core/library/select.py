"""Choosing what goes into a library: the verified best record per (kernel, sizes) of a target.

A *target* names the machines a library is built for (``resolve_target``):

* ``local``: this machine (``records.machine_fingerprint()``);
* a fingerprint (16 hex digits) that a record or a known runner has;
* a runner name, or a runner label: the fingerprints of that runner's (those runners')
  records and reported hardware.

Guarantees:

* ``usable(record)`` is True only for a verified record of a library kernel with a positive
  ``median_s`` and a list of step texts; everything else (failed measurements, pasted IR,
  malformed lines) is ignored, never an error.
* ``candidates(records, fingerprints)`` maps each ``(kernel, size key)`` to its usable
  records on those fingerprints, fastest first (ties: fewer steps first, then older first),
  one per distinct step sequence (its fastest measurement).
* ``resolve_target`` raises ``LibraryError`` (one line: what was asked and what is known)
  for a target nothing matches, and for one that names only emulated runners (label
  ``emulated``: they check correctness under qemu and measure nothing; the message names
  the ISA to build for instead); it never returns an empty set.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..errors import Unlocated
from ..records import fingerprint_of_hardware, machine_fingerprint

_FINGERPRINT = re.compile(r"[0-9a-f]{16}\Z")


class LibraryError(Unlocated):
    """A refusal of the library builder or loader; str() is one line saying why."""


@dataclass
class RunnerInfo:
    """What the builder knows of a runner without its records (from the web app)."""
    name: str
    labels: list = field(default_factory=list)
    fingerprint: Optional[str] = None


def full_sizes(kernel: str, sizes) -> Optional[dict]:
    """Every size of a library kernel (defaults filled in), or None if kernel or sizes are
    not valid for the library."""
    from ..kernels import load_kernel
    try:
        program = load_kernel(kernel, {k: int(v) for k, v in dict(sizes or {}).items()})
    except (KeyError, ValueError, TypeError, OSError):
        return None
    values = program.size_values
    return values if all(v >= 1 for v in values.values()) else None


def size_key(sizes: dict) -> tuple:
    return tuple(sorted((str(k), int(v)) for k, v in sizes.items()))


def usable(record) -> bool:
    if not isinstance(record, dict) or record.get("verified") is not True:
        return False
    med = record.get("median_s")
    if isinstance(med, bool) or not isinstance(med, (int, float)) or not med > 0:
        return False
    steps = record.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        return False
    kernel = record.get("kernel")
    return isinstance(kernel, str) and full_sizes(kernel, record.get("sizes")) is not None


def record_fingerprint(record: dict) -> Optional[str]:
    fp = record.get("fingerprint")
    if isinstance(fp, str) and fp:
        return fp
    if isinstance(record.get("hardware"), dict) and record["hardware"]:
        return fingerprint_of_hardware(record["hardware"])
    return None


def resolve_target(target: str, records: Iterable[dict], runners: Iterable[RunnerInfo] = ()) -> set:
    """The fingerprints a target names (see the module docstring), or LibraryError."""
    if not isinstance(target, str) or not target.strip():
        raise LibraryError("--target: a fingerprint, a runner name, a label or 'local' is required")
    target = target.strip()
    if target == "local":
        return {machine_fingerprint()}
    records, runners = list(records), list(runners)
    found = set()
    for r in records:
        if not isinstance(r, dict):
            continue
        fp = record_fingerprint(r)
        labels = r.get("labels") if isinstance(r.get("labels"), list) else []
        if fp and (fp == target or r.get("runner") == target or target in labels):
            found.add(fp)
    named = [x for x in runners if target in (x.name, x.fingerprint, *x.labels)]
    if named and not found and all("emulated" in x.labels for x in named):
        isa = next((l.split(":", 1)[1] for x in named for l in x.labels
                    if l.startswith("emulated:")), None)
        raise LibraryError(f"'{target}' names emulated runner(s) ({', '.join(x.name for x in named)}): "
                           f"they check correctness under an emulator and measure nothing"
                           + (f"; build for the ISA with --target {isa}" if isa else ""))
    for runner in named:
        if runner.fingerprint and "emulated" not in runner.labels:
            found.add(runner.fingerprint)
    if not found:
        names = sorted({r.get("runner") for r in records if isinstance(r, dict)
                        and isinstance(r.get("runner"), str)} | {x.name for x in runners})
        known = ", ".join(names[:12]) or "none"
        kind = "fingerprint" if _FINGERPRINT.match(target) else "runner, label or fingerprint"
        raise LibraryError(f"unknown target '{target}': no record or runner has that {kind} "
                           f"(runners with records: {known}; or use 'local')")
    return found


def candidates(records: Iterable[dict], fingerprints: set) -> dict:
    """{(kernel, size key): [record, ...]} fastest first (see the module docstring)."""
    by_steps = {}
    for r in records:
        if not usable(r) or record_fingerprint(r) not in fingerprints:
            continue
        sizes = full_sizes(r["kernel"], r.get("sizes"))
        key = (r["kernel"], size_key(sizes), tuple(r["steps"]))
        best = by_steps.get(key)
        if best is None or r["median_s"] < best["median_s"]:
            by_steps[key] = {**r, "sizes": sizes}
    out = {}
    for (kernel, skey, _steps), r in by_steps.items():
        out.setdefault((kernel, skey), []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: (r["median_s"], len(r["steps"]), str(r.get("time") or "")))
    return out


def baseline_s(rows: list) -> Optional[float]:
    """The best median of the untransformed kernel (no steps) among rows, or None."""
    times = [r["median_s"] for r in rows if not r["steps"]]
    return min(times) if times else None


def fingerprints_with_records(records: Iterable[dict]) -> set:
    return {record_fingerprint(r) for r in records if usable(r)} - {None}

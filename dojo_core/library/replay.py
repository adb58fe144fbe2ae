"""Replay for a new machine: other machines' best step sequences, measured here.

``replay_here(records, kernels=None, per_size=3)`` takes, for each (kernel, sizes) measured
on other fingerprints, the ``per_size`` fastest distinct step sequences (relative to each
source machine's own untransformed kernel where it was measured, else by time), replays
them here with the harness -- build, verify against the untransformed kernel, measure --
and measures the untransformed kernel here too.  It returns ``(records, transfers)``:

* ``records``: one record (records.py format, this machine's fingerprint, ``agent``
  ``"replay"``, ``replayed_from`` the source fingerprint) per verified measurement, the
  untransformed kernel's included; failed ones are not records.
* ``transfers``: one dict per replayed sequence: kernel, sizes, steps (count), source runner
  and fingerprint, ``source_speedup`` (its speedup on the source machine, or None),
  ``here_speedup`` (here, or None), ``verified``, ``error`` and ``held`` (verified and faster
  than the untransformed kernel here).

A step sequence that no longer applies, fails to compile, or gives wrong outputs is a
transfer that did not hold (its ``error`` says why), never an exception.
"""
from __future__ import annotations

from ..errors import DojoError
from ..records import bench_record, machine_fingerprint
from .select import baseline_s, candidates, fingerprints_with_records


def _measure(root, program, kernel, steps, min_time, source=None):
    """(record or None, error or None) of one local measurement of program."""
    from .. import harness
    from ..codegen.targets import detect_host_target
    from ..kernels import random_inputs
    target = detect_host_target()
    inputs = random_inputs(root, 0)
    try:
        lib = harness.build(program, target)
        check = harness.verify(program, root, inputs, target=target, library=lib)
        if not check["verified"]:
            return None, "outputs differ from the untransformed kernel"
        timing = harness.measure(program, inputs, min_time=min_time, library=lib)
    except (harness.RunError, harness.CompileError) as exc:
        return None, " ".join(str(exc).split())[:300]
    extra = {"agent": "replay", "runner": "local"}
    if source is not None:
        extra.update(replayed_from=source.get("fingerprint"), history_url=source.get("history_url"))
    record = bench_record(root, program, steps, timing, True, lib.compiled.compiler,
                          lib.compiled.flags, target.name, kernel=kernel, **extra)
    return record, None


def _ranked(rows_by_fp: dict, per_size: int) -> list:
    """The per_size best distinct step sequences over the source fingerprints."""
    scored = []
    for fp, rows in rows_by_fp.items():
        base = baseline_s(rows)
        for r in rows:
            if r["steps"]:
                speedup = base / r["median_s"] if base else None
                scored.append((-(speedup or 0.0), r["median_s"], fp, r, speedup))
    scored.sort(key=lambda t: (t[0], t[1]))
    seen, out = set(), []
    for _neg, _med, fp, r, speedup in scored:
        key = tuple(r["steps"])
        if key in seen:
            continue
        seen.add(key)
        out.append((r, speedup))
        if len(out) >= per_size:
            break
    return out


def replay_here(records, kernels=None, per_size: int = 3, min_time: float = 0.2, log=None):
    """See the module docstring."""
    from ..kernels import load_kernel
    from ..steps import replay

    records = list(records)
    here = machine_fingerprint()
    sources = fingerprints_with_records(records) - {here}
    groups = {}
    for fp in sources:
        for (kernel, skey), rows in candidates(records, {fp}).items():
            if kernels is None or kernel in kernels:
                groups.setdefault((kernel, skey), {})[fp] = rows
    new_records, transfers = [], []
    for (kernel, skey), rows_by_fp in sorted(groups.items()):
        root = load_kernel(kernel, dict(skey))
        sizes = root.size_values
        base, err = _measure(root, root, kernel, [], min_time)
        if base is not None:
            new_records.append(base)
        for source, source_speedup in _ranked(rows_by_fp, per_size):
            t = {"kernel": kernel, "sizes": sizes, "steps": len(source["steps"]),
                 "source_runner": source.get("runner"), "source_fingerprint": source.get("fingerprint"),
                 "source_speedup": source_speedup, "here_speedup": None, "verified": False,
                 "error": None, "held": False}
            try:
                program = replay(root, source["steps"], f"<{kernel} steps>")
            except DojoError as exc:
                t["error"] = f"does not replay here: {exc.message}"
                transfers.append(t)
                continue
            record, error = _measure(root, program, kernel, source["steps"], min_time, source)
            if record is not None:
                new_records.append(record)
                t["verified"] = True
                if base is not None:
                    t["here_speedup"] = base["median_s"] / record["median_s"]
                    t["held"] = t["here_speedup"] > 1.0
            t["error"] = error
            transfers.append(t)
            if log:
                log(f"replayed {len(source['steps'])} steps of {kernel} here")
    return new_records, transfers


def describe_transfer(t: dict) -> str:
    sizes = ",".join(f"{k}={v}" for k, v in t["sizes"].items())
    there = f"{t['source_speedup']:.2f}x" if t.get("source_speedup") else "?"
    here = f"{t['here_speedup']:.2f}x" if t.get("here_speedup") else "?"
    verdict = "held up" if t["held"] else ("did not hold" + (f" ({t['error']})" if t.get("error") else ""))
    return (f"transfer {t['kernel']}({sizes}): {t['steps']} steps from {t.get('source_runner') or '?'} "
            f"[{t.get('source_fingerprint') or '?'}]: {there} there, {here} here: {verdict}")

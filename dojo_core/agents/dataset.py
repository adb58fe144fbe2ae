"""The dataset export of issue 7 (item 7): (state, action, measured time, runner) as JSON lines.

``export_records(records, on_error=None)`` turns measurement records into one JSON line per
record (a ``str`` ending in ``\\n``), in input order.  Input: plain dicts, the
``records.py`` format or the web app's histories flattened to it; the fields read are

    "kernel": library name | null, "source": root IR text (used when present),
    "sizes": {...}, "steps": [step texts from the root], "state_ir": IR text of the state
    *before* the last step (optional: saves the replay), "median_s", "min_s", "max_s",
    "verified", "error", "runner", "fingerprint", "agent", "time", "job", "history_url".

Each line is a transition, format ``perfdojo-transitions`` version 1:

    {"format": "perfdojo-transitions", "version": 1,
     "kernel": str | null, "sizes": {...},
     "state_ir": canonical IR of the state the action was taken in,
     "state_hash": sha256 of state_ir,
     "action": the last step text (null for a baseline record: no steps),
     "steps_before": [the steps leading to state_ir],
     "next_state_hash": sha256 of the canonical IR after the action,
     "median_s", "min_s", "max_s": seconds | null, "verified": bool, "error": str | null,
     "runner": str | null, "fingerprint": str | null,
     "agent": str | null, "time": str | null, "job": id | null,
     "history_url": str | null}

A baseline record (no steps) gives ``action: null`` and ``next_state_hash ==
state_hash``.  Guarantees: hashes are ``records.text_hash`` of ``printer.print_program``
(the same as ``program_hash``), so transitions chain (a line's ``next_state_hash`` is the
``state_hash`` of the lines taken from it); a record that cannot be rebuilt (no kernel or
source, bad IR, unknown kernel, illegal step) is skipped, never an exception, and reported
to ``on_error(index, reason)`` when given.
"""
from __future__ import annotations

import json
from typing import Callable, Iterable, Iterator, Optional

from ..errors import DojoError
from ..printer import print_program
from ..records import text_hash
from ..replay_cache import SHARED, ReplayCache

FORMAT = "perfdojo-transitions"
VERSION = 1


def _root(record: dict, roots: dict):
    from ..kernels import load_kernel
    from ..parser import parse
    sizes = record.get("sizes") or {}
    key = (record.get("kernel"), record.get("source"), json.dumps(sizes, sort_keys=True))
    if key not in roots:
        if record.get("source"):
            root = parse(record["source"])
            roots[key] = root.with_sizes(sizes) if sizes else root
        elif record.get("kernel"):
            roots[key] = load_kernel(record["kernel"], sizes)
        else:
            raise ValueError("the record has neither a kernel name nor an IR source")
    return roots[key]


def transition(record: dict, states: Optional[ReplayCache] = None,
               roots: Optional[dict] = None) -> dict:
    """The transition object of one record; raises ValueError/KeyError/DojoError when it
    cannot be rebuilt."""
    from ..parser import parse
    from ..transforms import apply_step
    states = states if states is not None else SHARED
    roots = roots if roots is not None else {}
    if not isinstance(record, dict):
        raise ValueError("a record must be a JSON object")
    steps = record.get("steps") or []
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        raise ValueError("'steps' must be a list of step texts")
    before = tuple(steps[:-1])
    if record.get("state_ir") and steps:
        state = parse(record["state_ir"])
    else:
        state = states.program(_root(record, roots), before)
    state_ir = print_program(state)
    if steps:
        next_hash = text_hash(print_program(apply_step(state, steps[-1])))
    else:
        next_hash = text_hash(state_ir)
    return {
        "format": FORMAT, "version": VERSION,
        "kernel": record.get("kernel"), "sizes": dict(state.size_values),
        "state_ir": state_ir, "state_hash": text_hash(state_ir),
        "action": steps[-1] if steps else None, "steps_before": list(before),
        "next_state_hash": next_hash,
        "median_s": record.get("median_s"), "min_s": record.get("min_s"),
        "max_s": record.get("max_s"), "verified": bool(record.get("verified", False)),
        "error": record.get("error"), "runner": record.get("runner"),
        "fingerprint": record.get("fingerprint"), "agent": record.get("agent"),
        "time": record.get("time"), "job": record.get("job"),
        "history_url": record.get("history_url"),
    }


def export_records(records: Iterable[dict],
                   on_error: Optional[Callable[[int, str], None]] = None) -> Iterator[str]:
    """One JSON line per rebuildable record (module docstring)."""
    states, roots = SHARED, {}
    for index, record in enumerate(records):
        try:
            item = transition(record, states, roots)
        except DojoError as exc:
            if on_error is not None:
                on_error(index, str(exc))
            continue
        except (ValueError, KeyError, TypeError) as exc:
            if on_error is not None:
                on_error(index, f"{type(exc).__name__}: {exc}")
            continue
        yield json.dumps(item, sort_keys=True) + "\n"

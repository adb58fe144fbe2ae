"""Histories as files and as text: export, import, fork (an export imported for a new
owner), and the path to a step as a ``.steps`` text and its replay.

Guarantees:

* An export is ``{"format": "perfdojo-history", "version": 1, ...}`` with every step's
  index, parent, text and IR, and its benchmark results: each finished measurement with
  the runner that measured it, its job id and the hash of the program it measured.
* An import replays every step from the root before anything is stored (the IR in the
  file is only compared, never trusted; a difference is a warning), and refuses
  (``Refusal`` 400, nothing stored) a malformed file, an unknown format or version, more
  than ``engine.MAX_STEPS`` steps or ``MAX_RESULTS`` results, or a step that is not legal.
  A result is kept (a finished job of the new session, marked ``imported_from`` with the
  session, job and runner it came from; never queued, never in a leaderboard) only when
  its program hash is that of the replayed step; otherwise it is dropped with a warning.
* ``steps_text`` is the path from the root to a step in the command line's ``.steps``
  format (dojo_core/steps.py): comment lines, then one step a line.
* ``replay_text`` checks every line of a ``.steps`` text against dojo_core before it
  stores anything: the first line that is not legal is refused (400) with its line number
  and reason, and then nothing is applied.
"""
from __future__ import annotations

import math

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from dojo_core import DojoError, parse_steps, text_hash
from webapp.refusal import Refusal
from webapp.runners.models import Job, Runner

from . import engine, integration
from .models import Session, Step
from .services import (Actor, add_step, checked_root, get_step, new_session, normalize_action,
                       path_texts, program_at, require_owner, steps_of)

EXPORT_FORMAT = "perfdojo-history"
EXPORT_VERSION = 1
MAX_RESULTS = 5000
MAX_STEPS_TEXT = 64 * 1024
MAX_STEPS_LINES = 500


def export_history(session: Session) -> dict:
    steps = sorted(session.steps.all(), key=lambda s: s.index)
    results = _exported_results(session)
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "id": session.id,
        "url": session.url,
        "kernel": session.kernel or None,
        "title": session.title,
        "source": session.source,
        "sizes": session.sizes,
        "engine_version": session.engine_version,
        "created": session.created.isoformat(),
        "forked_from": session.forked_from_id,
        "current": session.current,
        "steps": [{"index": s.index, "parent": s.parent, "text": s.text, "ir": s.ir,
                   "results": results.get(s.index, [])} for s in steps],
    }


def _exported_results(session: Session) -> dict:
    """{step index: [measurement, ...]}: every finished job of the session with a median."""
    out = {}
    for job in integration.jobs_for(session.id):
        if integration.measurement(job) is None or not isinstance(job.get("step_index"), int):
            continue
        result = dict(job["result"])
        origin = result.get("imported_from") if isinstance(result.get("imported_from"), dict) else None
        runner = job.get("runner") or result.get("runner") or (origin or {}).get("runner")
        out.setdefault(job["step_index"], []).append({
            "runner": runner, "job": job.get("id"), "finished": job.get("finished"),
            "program_hash": job.get("program_hash"), "batch": job.get("batch"), "options": job.get("options") or {},
            "result": result})
    return out


def import_history(actor: Actor, data, forked_from: Session | None = None, forked_at=None) -> tuple:
    """(session, owner token or None, warnings) from an exported history; every step is
    replayed from the root (stored IR in the file is only compared, never trusted)."""
    if not isinstance(data, dict):
        raise Refusal(400, "a history must be a JSON object")
    if data.get("format", EXPORT_FORMAT) != EXPORT_FORMAT:
        raise Refusal(400, f"format must be {EXPORT_FORMAT!r}")
    if data.get("version", EXPORT_VERSION) != EXPORT_VERSION:
        raise Refusal(400, f"unsupported history version {data.get('version')!r} (this server reads {EXPORT_VERSION})")
    source = data.get("source")
    if not isinstance(source, str):
        raise Refusal(400, "source: the root IR text is required")
    kernel = data.get("kernel") or ""
    if not isinstance(kernel, str) or len(kernel) > 100:
        raise Refusal(400, "kernel must be a name")
    title = data.get("title") or ""
    if not isinstance(title, str):
        raise Refusal(400, "title must be a string")
    raw_steps = data.get("steps")
    if raw_steps is None:
        raw_steps = [{"index": 0, "parent": None, "text": ""}]
    if not isinstance(raw_steps, list) or not raw_steps:
        raise Refusal(400, "steps must be a non-empty list")
    if len(raw_steps) > engine.MAX_STEPS:
        raise Refusal(400, f"too many steps ({len(raw_steps)}, limit {engine.MAX_STEPS})")
    text, _, sizes = checked_root(source=source)
    parsed = {}
    for k, item in enumerate(raw_steps):
        if not isinstance(item, dict):
            raise Refusal(400, f"steps[{k}] must be an object")
        index = item.get("index", k)
        parent = item.get("parent", None if k == 0 else k - 1)
        if isinstance(index, bool) or not isinstance(index, int) or index != k:
            raise Refusal(400, f"steps[{k}].index must be {k} (steps are listed in index order from 0)")
        if k == 0:
            if parent is not None or (item.get("text") or ""):
                raise Refusal(400, "steps[0] must be the root (parent null, empty text)")
            parsed[0] = (None, "")
            continue
        if isinstance(parent, bool) or not isinstance(parent, int) or not 0 <= parent < k:
            raise Refusal(400, f"steps[{k}].parent must be the index of an earlier step")
        parsed[k] = (parent, normalize_action(item.get("text")))
    results = _parsed_results(raw_steps)
    current = data.get("current", 0)
    if isinstance(current, bool) or not isinstance(current, int) or current not in parsed:
        current = 0
    # replay everything before storing anything
    texts_of = {0: ()}
    irs = {0: text}
    warnings = []
    for k in range(1, len(parsed)):
        parent, step_text = parsed[k]
        texts_of[k] = texts_of[parent] + (step_text,)
        try:
            program = engine.replay(text, texts_of[k])
        except RecursionError:
            raise Refusal(400, f"steps[{k}] '{step_text}': nested too deeply") from None
        except DojoError as exc:
            raise Refusal(400, f"steps[{k}] '{step_text}' is not legal after step {parent}: "
                               f"{getattr(exc, 'message', str(exc))}") from None
        irs[k] = engine.print_text(program)
        given = raw_steps[k].get("ir")
        if isinstance(given, str) and given != irs[k]:
            warnings.append(f"step {k}: the IR in the file differs from the replay; the replay is kept")
    with transaction.atomic():
        session, token = new_session(text, kernel, sizes, actor, title=title[:200],
                                      forked_from=forked_from, forked_at=forked_at, current=current)
        Step.objects.bulk_create([
            Step(session=session, index=k, parent=parsed[k][0], text=parsed[k][1], ir=irs[k])
            for k in range(1, len(parsed))])
        warnings += _store_results(session, results, irs, texts_of, data.get("id"))
    return session, token, warnings


def _parsed_results(raw_steps: list) -> dict:
    """{step index: [checked result entries]} of an export's steps (400 when malformed)."""
    out, total = {}, 0
    for k, item in enumerate(raw_steps):
        entries = item.get("results")
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise Refusal(400, f"steps[{k}].results must be a list")
        total += len(entries)
        if total > MAX_RESULTS:
            raise Refusal(400, f"too many results (more than {MAX_RESULTS})")
        for n, e in enumerate(entries):
            where = f"steps[{k}].results[{n}]"
            if not isinstance(e, dict) or not isinstance(e.get("result"), dict):
                raise Refusal(400, f"{where} must be an object with a 'result' object")
            median = e["result"].get("median_s")
            if isinstance(median, bool) or not isinstance(median, (int, float)) or not 0 < median < math.inf:
                raise Refusal(400, f"{where}.result.median_s must be a positive number of seconds")
            runner = e.get("runner")
            if not isinstance(runner, str) or not runner.strip() or len(runner) > 64:
                raise Refusal(400, f"{where}.runner must name the runner that measured it")
            phash = e.get("program_hash")
            if phash is not None and not isinstance(phash, str):
                raise Refusal(400, f"{where}.program_hash must be a string")
            batch = e.get("batch")
            if batch is not None and (not isinstance(batch, str) or len(batch) > 64):
                raise Refusal(400, f"{where}.batch must be a string of at most 64 characters")
            if not isinstance(e.get("options", {}), dict):
                raise Refusal(400, f"{where}.options must be an object")
            out.setdefault(k, []).append(e)
    return out


def _store_results(session: Session, results: dict, irs: dict, texts_of: dict, origin) -> list:
    """Finished jobs of ``session`` for the imported results; warnings for those dropped."""
    warnings, jobs = [], []
    batches = any(f.name == "batch" for f in Job._meta.get_fields())
    runners = {r.name: r for r in Runner.objects.filter(
        name__in={e["runner"] for entries in results.values() for e in entries})}
    now = timezone.now()
    for k, entries in sorted(results.items()):
        phash = text_hash(irs[k])
        for e in entries:
            if e.get("program_hash") not in (None, phash):
                warnings.append(f"step {k}: a result on {e['runner']} measured another program; not kept")
                continue
            result = dict(e["result"], runner=e["runner"])
            result["imported_from"] = {"session": origin if isinstance(origin, str) else None,
                                       "job": e.get("job") if isinstance(e.get("job"), int) else None,
                                       "runner": e["runner"]}
            finished = _when(e.get("finished"))
            extra = {"batch": e.get("batch") or ""} if batches else {}
            jobs.append(Job(**extra, state=Job.DONE, source=session.source, steps=list(texts_of[k]), sizes=session.sizes,
                            kernel="", options=e.get("options") or {}, runner=runners.get(e["runner"]),
                            requested_runner=e["runner"], created=finished or now, finished=finished or now,
                            result=result, session_id=session.id, step_index=k, program_hash=phash,
                            submitter=f"import:{session.id}"[:80]))
    Job.objects.bulk_create(jobs)
    return warnings


def _when(value):
    """An ISO time with its zone from a file, or None (malformed or naive)."""
    try:
        when = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return when if when is not None and when.tzinfo is not None else None


def fork(session: Session, actor: Actor, at=None) -> tuple:
    """(new session, owner token or None): a copy of the whole tree owned by ``actor``;
    its current step is ``at`` (default: the original's current step)."""
    data = export_history(session)
    if at is not None:
        data["current"] = get_step(session, at).index
    new, token, _ = import_history(actor, data, forked_from=session, forked_at=data["current"])
    return new, token


# ============================================================================ .steps texts

def steps_text(session: Session, index: int, steps: dict | None = None) -> str:
    """The path from the root to step ``index`` as a ``.steps`` text."""
    steps = steps if steps is not None else steps_of(session)
    texts = path_texts(steps, index)
    head = [f"# {session.name}: session {session.id}, step {index} ({len(texts)} step{'s' * (len(texts) != 1)})",
            f"# sizes: {', '.join(f'{k}={v}' for k, v in session.sizes.items())}" if session.sizes else None]
    return "\n".join([h for h in head if h] + list(texts)) + "\n"


def replay_text(session: Session, actor: Actor, parent, text) -> tuple:
    """(last step, number of lines applied): every step of the ``.steps`` ``text`` applied
    in turn from step ``parent``.  All lines are checked before any is stored; the first
    that is not legal is refused (400, naming its line and the reason) with nothing applied."""
    require_owner(session, actor)
    if not isinstance(text, str):
        raise Refusal(400, "steps must be a .steps text")
    if len(text.encode("utf-8", "replace")) > MAX_STEPS_TEXT:
        raise Refusal(400, f"the .steps text is too large (limit {MAX_STEPS_TEXT} bytes)")
    if "\0" in text:
        raise Refusal(400, "the .steps text must not contain NUL bytes")
    lines = parse_steps(text)
    if not lines:
        raise Refusal(400, "the .steps text has no steps (one step a line; # starts a comment)")
    if len(lines) > MAX_STEPS_LINES:
        raise Refusal(400, f"too many steps ({len(lines)}, limit {MAX_STEPS_LINES})")
    steps = steps_of(session)
    start = get_step(session, parent, steps, "parent")
    program_at(session, start.index, steps)
    texts = path_texts(steps, start.index)
    for lineno, raw in lines:
        try:
            step_text = normalize_action(raw)
        except Refusal as r:
            raise Refusal(400, f"line {lineno}: {r.reason}; nothing was applied") from None
        texts += (step_text,)
        try:
            engine.replay(session.source, texts)
        except DojoError as exc:
            raise Refusal(400, f"line {lineno}: '{step_text}' is not legal there: "
                               f"{getattr(exc, 'message', str(exc))}; nothing was applied") from None
        except RecursionError:
            raise Refusal(400, f"line {lineno}: '{step_text}': nested too deeply; nothing was applied") from None
    new = len(steps) + len(lines)
    if new > engine.MAX_STEPS:
        raise Refusal(400, f"replaying {len(lines)} steps could exceed the maximum of {engine.MAX_STEPS} "
                           f"steps of a session; fork it")
    step = start
    with transaction.atomic():
        for _, raw in lines:
            step, _ = add_step(session, actor, step.index, raw)
    return step, len(lines)

"""Histories as files: export, import, and fork (an export imported for a new owner).

Guarantees: an export is ``{"format": "perfdojo-history", "version": 1, ...}`` with every
step's index, parent, text and IR; an import replays every step from the root before
anything is stored (the IR in the file is only compared, never trusted; a difference is a
warning), and refuses (``Refusal`` 400, nothing stored) a malformed file, an unknown
format or version, more than ``engine.MAX_STEPS`` steps, or a step that is not legal.
"""
from __future__ import annotations

from django.db import transaction

from dojo_core.errors import DojoError
from webapp.refusal import Refusal

from . import engine
from .models import Session, Step
from .services import Actor, checked_root, get_step, new_session, normalize_action

EXPORT_FORMAT = "perfdojo-history"
EXPORT_VERSION = 1


def export_history(session: Session) -> dict:
    steps = sorted(session.steps.all(), key=lambda s: s.index)
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
        "steps": [{"index": s.index, "parent": s.parent, "text": s.text, "ir": s.ir} for s in steps],
    }


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
    return session, token, warnings


def fork(session: Session, actor: Actor, at=None) -> tuple:
    """(new session, owner token or None): a copy of the whole tree owned by ``actor``;
    its current step is ``at`` (default: the original's current step)."""
    data = export_history(session)
    if at is not None:
        data["current"] = get_step(session, at).index
    new, token, _ = import_history(actor, data, forked_from=session, forked_at=data["current"])
    return new, token

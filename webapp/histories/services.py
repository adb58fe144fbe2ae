"""Histories: creating and extending them, who may change them (export, import and fork
are in transfer.py).

Used by the editor pages and the JSON API alike.  Guarantees:

* Every refusal is a ``Refusal(status, reason)`` (webapp/refusal.py) (400 bad input or illegal action,
  403 not the owner, 404 unknown session or step, 413 too large) and nothing stored
  changes because of it.
* A step is stored only after replaying the whole path from the root with dojo_core
  and applying its action there; its ``ir`` is the canonical text of the result.
  Stored IR is never used to decide legality.  Once it is committed, the open pages
  of the session are told (``push.announce_steps``).
* Ids are short and content-addressed: base32 of sha256(source, creation time, owner),
  10 characters (a nonce is mixed in only on a collision).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from dojo_core import DojoError, canonical, kernels, load
from webapp.refusal import Refusal

from . import engine, push
from .models import Session, Step

OWNED_KEY = "dojo_owned_sessions"      # browser-session list of anonymous sessions it created


# ============================================================================ who is asking

@dataclass
class Actor:
    """Who makes a request: a signed-in user, a browser session, an owner token."""
    user: object = None
    session_key: str = ""
    owned: frozenset = field(default_factory=frozenset)
    token: str = ""

    @property
    def user_id(self):
        u = self.user
        return u.pk if u is not None and getattr(u, "is_authenticated", False) else None


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def can_edit(session: Session, actor: Actor) -> bool:
    if session.owner_id is not None:
        return actor.user_id == session.owner_id
    if actor.token and session.owner_token_hash and hmac.compare_digest(
            digest(actor.token), session.owner_token_hash):
        return True
    if session.id in actor.owned:
        return True
    return bool(actor.session_key) and bool(session.owner_key) and hmac.compare_digest(
        actor.session_key, session.owner_key)


def require_owner(session: Session, actor: Actor) -> None:
    if not can_edit(session, actor):
        raise Refusal(403, f"only the owner of session {session.id} can change it; fork it to make your own copy")


# ============================================================================ ids and lookups

def _make_id(source: str, when, owner: str, nonce: str = "") -> str:
    h = hashlib.sha256(f"{source}\0{when.isoformat()}\0{owner}\0{nonce}".encode()).digest()
    return base64.b32encode(h).decode().lower()[:10]


def get_session(session_id) -> Session:
    if not isinstance(session_id, str) or not session_id.isalnum() or len(session_id) > 16:
        raise Refusal(404, f"no session {str(session_id)[:40]!r}")
    session = Session.objects.filter(id=session_id).first()
    if session is None:
        raise Refusal(404, f"no session {session_id!r}")
    return session


def steps_of(session: Session) -> dict:
    """{index: Step} of a session."""
    return {s.index: s for s in session.steps.all()}


def path_indices(steps: dict, index: int) -> list:
    """Indices from the root to ``index`` (inclusive)."""
    path = []
    seen = set()
    i = index
    while i is not None:
        if i in seen or i not in steps:
            raise Refusal(500, f"broken history: step {index} has no path to the root")
        seen.add(i)
        path.append(i)
        i = steps[i].parent
    return path[::-1]


def path_texts(steps: dict, index: int) -> tuple:
    return tuple(steps[i].text for i in path_indices(steps, index)[1:])


def parse_index(value, what: str = "step") -> int:
    if isinstance(value, bool):
        raise Refusal(400, f"{what} must be a step index (an integer)")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value.strip()) < 10:
        n = int(value)
    else:
        raise Refusal(400, f"{what} must be a step index (an integer), not {str(value)[:40]!r}")
    if n < 0:
        raise Refusal(400, f"{what} must be a step index >= 0")
    return n


def get_step(session: Session, index, steps: dict | None = None, what: str = "step") -> Step:
    n = parse_index(index, what)
    steps = steps if steps is not None else steps_of(session)
    if n not in steps:
        raise Refusal(404, f"session {session.id} has no step {n} (steps 0..{max(steps)})")
    return steps[n]


def program_at(session: Session, index: int, steps: dict | None = None):
    """The replayed Program of step ``index`` (Refusal 409 if it no longer replays)."""
    steps = steps if steps is not None else steps_of(session)
    texts = path_texts(steps, index)
    try:
        return engine.replay(session.source, texts)
    except DojoError as exc:
        raise Refusal(409, f"step {index} no longer replays with engine {engine.ENGINE_VERSION}: "
                           f"{getattr(exc, 'message', str(exc))}") from None


# ============================================================================ create

def checked_root(kernel=None, source=None, sizes=None):
    """(canonical text, kernel name, sizes) of a new root, or a Refusal with the checker's message."""
    if (kernel is None) == (source is None):
        raise Refusal(400, "give exactly one of 'kernel' (a library kernel name) or 'source' (IR text)")
    if sizes is not None:
        if not isinstance(sizes, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in sizes.items()):
            raise Refusal(400, "sizes must be an object {NAME: positive integer}")
        if any(v < 1 or v > 1 << 24 for v in sizes.values()):
            raise Refusal(400, "sizes must be positive integers (at most 16777216)")
    if kernel is not None:
        if not isinstance(kernel, str):
            raise Refusal(400, "kernel must be a library kernel name")
        try:
            program = kernels.load_kernel(kernel, sizes or None)
        except KeyError as exc:
            reason = exc.args[0] if exc.args else str(exc)
            if isinstance(reason, str) and reason.startswith(("no kernel", "not a kernel")):
                raise Refusal(400, f"unknown kernel: {reason}") from None
            raise Refusal(400, f"kernel {kernel} has no size {reason!r} "
                               f"(sizes: {', '.join(kernels.load_kernel(kernel).size_values)})") from None
        text = canonical(program)
        name = kernel
    else:
        if not isinstance(source, str):
            raise Refusal(400, "source must be a string of Dojo IR")
        if len(source.encode("utf-8", "replace")) > engine.MAX_SOURCE_BYTES:
            raise Refusal(413, f"source too large ({len(source.encode('utf-8', 'replace'))} bytes, "
                               f"limit {engine.MAX_SOURCE_BYTES})")
        if "\0" in source:
            raise Refusal(400, "<source>:1:1: not a text (NUL byte)")
        text = source.replace("\r\n", "\n").replace("\r", "\n")
        try:
            program = load(text, "<source>", sizes or None)
        except DojoError as exc:
            errors = getattr(exc, "errors", None) or [exc]
            raise Refusal(400, str(exc), errors=[
                {"line": e.line, "col": e.col, "message": e.message} for e in errors]) from None
        except RecursionError:
            raise Refusal(400, "<source>:1:1: nested too deeply") from None
        text = canonical(program)
        name = ""
    try:
        program = engine.root_program(text)
    except DojoError as exc:
        raise Refusal(400, str(exc)) from None
    return text, name, program.size_values


def new_session(source: str, kernel: str, sizes: dict, actor: Actor, **fields) -> tuple:
    """(session, owner token or None), with step 0, in the caller's transaction."""
    now = timezone.now()
    owner = actor.user if actor.user_id is not None else None
    owner_tag = f"user:{owner.pk}" if owner else f"anon:{actor.session_key}"
    token = None
    token_hash = ""
    if owner is None:
        token = "pdo_" + secrets.token_urlsafe(24)
        token_hash = digest(token)
    for attempt in range(8):
        sid = _make_id(source, now, owner_tag, secrets.token_hex(8) if attempt else "")
        if not Session.objects.filter(id=sid).exists():
            break
    else:
        raise Refusal(500, "could not allocate a session id")
    session = Session.objects.create(
        id=sid, owner=owner, owner_key="" if owner else actor.session_key,
        owner_token_hash=token_hash, kernel=kernel, source=source, sizes=sizes,
        engine_version=engine.ENGINE_VERSION, created=now, updated=now, **fields)
    Step.objects.create(session=session, index=0, parent=None, text="", ir=source, created=now)
    return session, token


def create_session(actor: Actor, kernel=None, source=None, sizes=None, title: str = "") -> tuple:
    """(session, owner token or None): a new history rooted at a library kernel or pasted IR.
    Pasted IR with no ``title`` is titled with its kernel's name (``kernel NAME(...)``)."""
    text, name, all_sizes = checked_root(kernel, source, sizes)
    if not isinstance(title, str):
        raise Refusal(400, "title must be a string")
    if source is not None and not title:
        title = engine.root_program(text).name
    with transaction.atomic():
        return new_session(text, name, all_sizes, actor, title=title[:200])


# ============================================================================ steps

def normalize_action(action) -> str:
    if not isinstance(action, str):
        raise Refusal(400, "action must be a step text, e.g. 'split i by 32'")
    text = " ".join(action.split())
    if not text:
        raise Refusal(400, "action is empty")
    if len(text) > engine.MAX_ACTION_CHARS:
        raise Refusal(400, f"action too long ({len(text)} characters, limit {engine.MAX_ACTION_CHARS})")
    if "#" in text:
        raise Refusal(400, "action must not contain '#'")
    return text


def add_step(session: Session, actor: Actor, parent, action) -> tuple:
    """(step, created): apply ``action`` to step ``parent`` (replayed from the root).

    Applying an action that the parent already has as a child returns that child
    (created False).  Either way the session's current step becomes it."""
    require_owner(session, actor)
    text = normalize_action(action)
    steps = steps_of(session)
    parent_step = get_step(session, parent, steps, "parent")
    for s in steps.values():
        if s.parent == parent_step.index and s.text == text:
            _set_current(session, s.index)
            return s, False
    if len(steps) >= engine.MAX_STEPS:
        raise Refusal(400, f"session {session.id} has the maximum of {engine.MAX_STEPS} steps; fork it")
    program_at(session, parent_step.index, steps)          # the path itself must replay
    texts = path_texts(steps, parent_step.index) + (text,)
    try:
        new_program = engine.replay(session.source, texts)  # cached: the views reuse it
    except DojoError as exc:
        raise Refusal(400, f"'{text}' is not legal at step {parent_step.index}: "
                           f"{getattr(exc, 'message', str(exc))}") from None
    ir_text = engine.print_text(new_program)
    for _ in range(3):
        try:
            with transaction.atomic():
                # one writer per session at a time (PostgreSQL; SQLite serializes writers)
                Session.objects.select_for_update().filter(id=session.id).exists()
                last = Step.objects.filter(session=session).order_by("-index").values_list("index", flat=True).first()
                step = Step.objects.create(session=session, index=(last or 0) + 1, parent=parent_step.index,
                                           text=text, ir=ir_text)
                Session.objects.filter(id=session.id).update(current=step.index, updated=timezone.now())
                sid = session.id
                transaction.on_commit(lambda: push.announce_steps(sid))
            session.current = step.index
            return step, True
        except IntegrityError:           # two requests took the same index: try again
            continue
    raise Refusal(409, "the session changed while the step was applied; try again")


def _set_current(session: Session, index: int) -> None:
    Session.objects.filter(id=session.id).update(current=index, updated=timezone.now())
    session.current = index


def set_current(session: Session, actor: Actor, index) -> Step:
    """Move the current pointer to any step (branching starts from there)."""
    require_owner(session, actor)
    step = get_step(session, index)
    _set_current(session, step.index)
    return step


def undo(session: Session, actor: Actor) -> Step:
    """Move the current pointer to the parent of the current step (the root stays)."""
    require_owner(session, actor)
    steps = steps_of(session)
    cur = steps.get(session.current) or steps[0]
    target = cur.parent if cur.parent is not None else cur.index
    _set_current(session, target)
    return steps[target]


# ============================================================================ owners

def adopt(user, ids) -> int:
    """Give a user the anonymous sessions a browser session created (on login/sign-up)."""
    if not ids or user is None or not user.is_authenticated:
        return 0
    return Session.objects.filter(id__in=list(ids), owner__isnull=True).update(
        owner=user, owner_key="", owner_token_hash="")


# ============================================================================ a recheck under a new engine

def recheck(session: Session) -> list:
    """Problems replaying a history with this engine: [] when every step replays to its
    stored IR.  Records the engine version when all is well."""
    problems = []
    steps = steps_of(session)
    try:
        engine.root_program(session.source)
    except DojoError as exc:
        return [f"the root no longer checks: {exc}"]
    for index in sorted(steps):
        if index == 0:
            continue
        try:
            program = engine.replay(session.source, path_texts(steps, index))
        except DojoError as exc:
            problems.append(f"step {index} '{steps[index].text}' no longer applies: "
                            f"{getattr(exc, 'message', str(exc))}")
            continue
        if engine.print_text(program) != steps[index].ir:
            problems.append(f"step {index} '{steps[index].text}' now gives a different IR")
    if not problems and session.engine_version != engine.ENGINE_VERSION:
        Session.objects.filter(id=session.id).update(engine_version=engine.ENGINE_VERSION)
        session.engine_version = engine.ENGINE_VERSION
    return problems

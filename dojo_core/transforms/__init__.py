"""The transformation registry and the applicability detector (DESIGN.md section 4).

Contract used by the command line, the web app and the agents:

    actions(program) -> list[Action]          every legal step of this state, stable order
    apply_step(program, text) -> Program      parse a step text and apply it, or raise NotApplicable
    explain(program, text) -> str | None      why a step is not legal here (None if it is)

The catalogue itself is filled in by the transformation modules of this package.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import DojoError

REGISTRY: dict = {}   # transformation name -> module-like object with parse/check/apply/enumerate


class NotApplicable(DojoError):
    """A step that is not legal where it stands; .message says why in one sentence."""


@dataclass(frozen=True)
class Action:
    text: str
    kind: str


def actions(program) -> list:
    found = []
    for name, t in REGISTRY.items():
        for text in t.enumerate(program):
            found.append(Action(text, name))
    return found


def apply_step(program, text: str):
    words = text.split()
    if not words:
        raise NotApplicable("empty step")
    t = REGISTRY.get(words[0])
    if t is None:
        known = ", ".join(sorted(REGISTRY)) or "none yet"
        raise NotApplicable(f"unknown transformation '{words[0]}' (known: {known})")
    return t.apply_text(program, text)


def explain(program, text: str):
    try:
        apply_step(program, text)
    except NotApplicable as exc:
        return exc.message
    return None

"""The transformation registry and the applicability detector (DESIGN.md section 4).

    actions(program) -> list[Action]          every legal step of this state, stable order
    apply_step(program, text) -> Program      parse a step text and apply it, or raise NotApplicable
    explain(program, text) -> str | None      why a step is not legal here (None if it is)

Each transformation is one module of this package (a Transformation subclass: parse,
check, apply, candidates); REGISTRY lists them in the order actions() reports them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..printer import statement_number
from .base import NotApplicable, Transformation
from . import annotate, interchange, split
from . import fission, fuse, hoist, merge, reorder
from . import accumulate, divide, expand, inline, layout, materialize, partition, precompute
from . import pipeline, prefetch, rfactor, stage, timetile, wavefront

REGISTRY: dict = {}


def register(t: Transformation) -> Transformation:
    REGISTRY[t.name] = t
    return t


for _t in (split.SPLIT, partition.PARTITION, interchange.INTERCHANGE, merge.MERGE, fuse.FUSE,
           fission.FISSION, reorder.REORDER, hoist.HOIST, annotate.PARALLELIZE, annotate.VECTORIZE,
           annotate.UNROLL, annotate.BIND, stage.STAGE, accumulate.ACCUMULATE, layout.LAYOUT,
           divide.DIVIDE,
           inline.INLINE, materialize.MATERIALIZE, expand.EXPAND, rfactor.RFACTOR,
           prefetch.PREFETCH, precompute.PRECOMPUTE, timetile.TIMETILE,
           wavefront.WAVEFRONT, pipeline.PIPELINE):
    register(_t)


@dataclass(frozen=True)
class Action:
    text: str
    kind: str


def actions(program) -> list:
    """Every legal action of this state, grouped by transformation, deterministic order."""
    found = []
    for name, t in REGISTRY.items():
        for text in t.enumerate(program):
            found.append(Action(text, name))
    return found


def apply_step(program, text: str):
    """The program after one step; NotApplicable (with the reason) if it is not legal here."""
    words = text.split()
    if not words:
        raise NotApplicable("empty step")
    t = REGISTRY.get(words[0])
    if t is None:
        raise NotApplicable(f"unknown transformation '{words[0]}' (known: "
                            f"{', '.join(REGISTRY)})")
    return t.apply_text(program, " ".join(words))


def explain(program, text: str):
    """Why a step is not legal here, in one sentence; None when it is legal."""
    try:
        apply_step(program, text)
    except NotApplicable as exc:
        return exc.message
    return None


# the one-loop and one-statement transformations whose refusal at a ref is worth explaining
LOOP_PROBES = ("parallelize {r}", "vectorize {r}", "unroll {r}", "split {r} by 2")
STATEMENT_PROBES = ("hoist {r}",)


@dataclass(frozen=True)
class ActionsAt:
    """What can be done at one loop or statement: the legal actions naming it, and why the
    usual one-loop (one-statement) transformations that are not legal there are refused."""
    ref: str
    kind: str                       # "loop" or "statement"
    legal: tuple                    # Actions whose text names ref, in actions() order
    not_legal: tuple                # (text, one-sentence reason) pairs


def refs_in(text: str) -> set:
    """The loop and statement names an action text mentions (its words after the first)."""
    return set(text.replace(",", " ").split()[1:])


def ref_kind(ref: str) -> str:
    """"statement" for an assignment's or a prefetch's name ``sN``, else "loop"."""
    return "statement" if statement_number(ref) is not None else "loop"


def explain_at(program, ref: str, found=None) -> ActionsAt:
    """The actions at ``ref`` (``found``: this program's actions() when already computed)."""
    found = actions(program) if found is None else found
    legal = tuple(a for a in found if ref in refs_in(a.text))
    kind = ref_kind(ref)
    texts = {a.text for a in legal}
    not_legal = []
    for probe in (STATEMENT_PROBES if kind == "statement" else LOOP_PROBES):
        text = probe.format(r=ref)
        if text not in texts:
            reason = explain(program, text)
            if reason:
                not_legal.append((text, reason))
    return ActionsAt(ref, kind, legal, tuple(not_legal))


__all__ = ["Action", "ActionsAt", "NotApplicable", "REGISTRY", "actions", "apply_step", "explain",
           "explain_at", "ref_kind", "refs_in", "register"]

"""The shape every transformation shares: parse a step text into parameters, say in one
sentence why it does not apply, apply it purely, and enumerate its legal instances."""
from __future__ import annotations

from ..errors import DojoError


class NotApplicable(DojoError):
    """A step that is not legal where it stands; .message says why in one sentence."""


class Transformation:
    """Subclasses set `name` and `usage` and implement parse/format/candidates/check/apply.

    Guarantees of the protocol: `check` returns None exactly when `apply` preserves the
    program's meaning at its sizes; `enumerate` lists only texts whose check is None, in a
    deterministic order; format(parse(words)) round-trips."""

    name = ""
    usage = ""

    def parse(self, words: list):
        raise NotImplementedError

    def format(self, params) -> str:
        raise NotImplementedError

    def candidates(self, program):
        return []

    def check(self, program, params):
        return None

    def apply(self, program, params):
        raise NotImplementedError

    # ------------------------------------------------------------------ shared behaviour

    def usage_error(self, detail: str = "") -> NotApplicable:
        extra = f" ({detail})" if detail else ""
        return NotApplicable(f"usage: {self.usage}{extra}")

    def enumerate(self, program) -> list:
        return [self.format(p) for p in self.candidates(program) if self.check(program, p) is None]

    def apply_text(self, program, text: str):
        params = self.parse(text.split()[1:])
        reason = self.check(program, params)
        if reason is not None:
            raise NotApplicable(reason)
        return self.apply(program, params)


def parse_int(word: str, what: str, t: Transformation) -> int:
    try:
        return int(word)
    except ValueError:
        raise t.usage_error(f"{what} must be an integer, got '{word}'") from None

"""The shape every transformation shares: parse a step text into parameters, say in one
sentence why it does not apply, apply it purely, and enumerate its legal instances."""
from __future__ import annotations

from .. import ir
from ..errors import DojoError
from .util import find_loop


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


class LoopPair(Transformation):
    """A transformation of two perfectly nested loops, ``NAME OUTER INNER`` (interchange,
    merge): the step text, the candidates (every loop whose body is one loop) and the
    shared refusals of ``pair``.  Subclasses set ``done`` (``"interchanged"``)."""

    done = ""

    def parse(self, words):
        if len(words) != 2:
            raise self.usage_error()
        return tuple(words)

    def format(self, params):
        return f"{self.name} {params[0]} {params[1]}"

    def candidates(self, program):
        for loop in ir.loops(program):
            if len(loop.body) == 1 and isinstance(loop.body[0], ir.Loop):
                yield loop.iterator, loop.body[0].iterator

    def pair(self, program, outer_name: str, inner_name: str):
        """(outer, its path, inner), or the reason they are no such pair: a missing loop,
        loops not perfectly nested, or an annotated loop."""
        outer, path = find_loop(program, outer_name)
        if outer is None:
            return f"there is no loop '{outer_name}'"
        inner, _ = find_loop(program, inner_name)
        if inner is None:
            return f"there is no loop '{inner_name}'"
        if not (len(outer.body) == 1 and outer.body[0] is inner):
            return (f"loops '{outer_name}' and '{inner_name}' are not perfectly nested "
                    f"('{inner_name}' must be the only statement in '{outer_name}')")
        if outer.annotations or inner.annotations:
            return f"annotated loops are not {self.done}; {self.name} before annotating"
        return outer, path, inner


def parse_int(word: str, what: str, t: Transformation) -> int:
    try:
        return int(word)
    except ValueError:
        raise t.usage_error(f"{what} must be an integer, got '{word}'") from None

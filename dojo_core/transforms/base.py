"""The shape every transformation shares: parse a step text into parameters, say in one
sentence why it does not apply, apply it purely, and enumerate its legal instances."""
from __future__ import annotations

from .. import ir
from ..errors import DojoError
from .util import locate


class NotApplicable(DojoError):
    """A step that is not legal where it stands; .message says why in one sentence."""


class Transformation:
    """Subclasses set `name` and `grammar` (or override parse/format) and implement
    candidates/check/apply.

    Guarantees of the protocol: `check` returns None exactly when `apply` preserves the
    program's meaning at its sizes; `enumerate` lists only texts whose check is None, in a
    deterministic order; format(parse(words)) round-trips.

    `grammar` states the words after the name once, for parse, format and the usage text:
    UPPER_CASE words are parameters, lower-case words must stand as written (``"LOOP by
    FACTOR"``); the parameters named in `integers` are parsed as integers.  `usage` defaults
    to the name, the grammar and `usage_note` in parentheses."""

    name = ""
    grammar = ""
    integers: tuple = ()
    usage_note = ""

    @property
    def usage(self) -> str:
        note = f" ({self.usage_note})" if self.usage_note else ""
        return f"{self.name} {self.grammar}{note}"

    def parse(self, words: list):
        """The parameters `grammar` names, in order: the word itself when there is one, else
        a tuple; a usage error when the words do not fit the grammar."""
        pattern = self.grammar.split()
        if not pattern:
            raise NotImplementedError
        if len(words) != len(pattern) or any(
                w != p for w, p in zip(words, pattern) if not _is_parameter(p)):
            raise self.usage_error()
        params = tuple(parse_int(w, p, self) if p in self.integers else w
                       for w, p in zip(words, pattern) if _is_parameter(p))
        return params[0] if len(params) == 1 else params

    def format(self, params) -> str:
        """The step text of parse's result (``format(parse(words))`` gives the words back)."""
        pattern = self.grammar.split()
        if not pattern:
            raise NotImplementedError
        values = iter(params if isinstance(params, tuple) else (params,))
        words = [str(next(values)) if _is_parameter(p) else p for p in pattern]
        return " ".join([self.name] + words)

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

    grammar = "OUTER INNER"
    done = ""

    def candidates(self, program):
        for loop in ir.loops(program):
            if len(loop.body) == 1 and isinstance(loop.body[0], ir.Loop):
                yield loop.iterator, loop.body[0].iterator

    def pair(self, program, outer_name: str, inner_name: str):
        """(outer, its path, inner), or the reason they are no such pair: a missing loop,
        loops not perfectly nested, or an annotated loop."""
        found = locate(program, loops=(outer_name, inner_name))
        if isinstance(found, str):
            return found
        (outer, path), (inner, _) = found
        if not (len(outer.body) == 1 and outer.body[0] is inner):
            return (f"loops '{outer_name}' and '{inner_name}' are not perfectly nested "
                    f"('{inner_name}' must be the only statement in '{outer_name}')")
        if outer.annotations or inner.annotations:
            return f"annotated loops are not {self.done}; {self.name} before annotating"
        return outer, path, inner

    def rectangular_pair(self, program, outer_name: str, inner_name: str):
        """``pair``, also refusing an inner loop whose bounds depend on the outer one."""
        found = self.pair(program, outer_name, inner_name)
        if isinstance(found, str):
            return found
        inner = found[2]
        if any(outer_name in ir.var_names(b) for b in (inner.lo, inner.hi)):
            return f"the bounds of '{inner_name}' depend on '{outer_name}'"
        return found


def _is_parameter(word: str) -> bool:
    """An UPPER_CASE word of a grammar (a parameter), not a keyword."""
    return word.isupper()


def parse_int(word: str, what: str, t: Transformation) -> int:
    """The integer ``word`` stands for; a usage error naming ``what`` when it is none."""
    try:
        return int(word)
    except ValueError:
        raise t.usage_error(f"{what} must be an integer, got '{word}'") from None

"""The IR statement each line of generated C is emitted for, tagged while generating.

``Origins`` is the generator's stack of statements being generated; ``Origins.tag`` makes a
line a ``Tagged`` string that carries that stack and keeps it when text is prepended or
appended, so the code generator's text is unchanged (``line_map`` reads the tags).
"""
from __future__ import annotations

from contextlib import contextmanager


class Tagged(str):
    """A line of C with the IR statement it was generated for (``origin``)."""

    def __new__(cls, text, origin):
        obj = super().__new__(cls, text)
        obj.origin = origin
        return obj

    def __add__(self, other):
        return Tagged(str.__add__(self, other), self.origin)

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return Tagged(str.__add__(other, self), self.origin)


class Origins:
    """The statement being generated: a stack of IR statements (innermost last)."""

    def __init__(self):
        self.stack = []
        self.aliases = {}           # id(stand-in statement) -> the program's statement

    @contextmanager
    def of(self, stmt):
        """Lines emitted inside are generated for ``stmt`` (or what it stands in for)."""
        self.stack.append(self.aliases.get(id(stmt), stmt))
        try:
            yield
        finally:
            self.stack.pop()

    def alias(self, stand_in, stmt) -> None:
        """``stand_in`` (a rewritten copy) is generated for the program's ``stmt``."""
        self.aliases[id(stand_in)] = self.aliases.get(id(stmt), stmt)

    def tag(self, text: str, stmt=None) -> str:
        """``text`` tagged with the statement being generated, or with ``stmt`` inside it
        (a text that is tagged already keeps its own)."""
        if isinstance(text, Tagged):
            return text
        stack = tuple(self.stack) + ((self.aliases.get(id(stmt), stmt),) if stmt is not None else ())
        return Tagged(text, stack) if stack else text


__all__ = ["Origins", "Tagged"]

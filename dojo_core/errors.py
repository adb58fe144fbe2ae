"""The one error hierarchy of the IR tool chain: every refusal is a ``DojoError``, never a
traceback, so that ``except DojoError`` catches them all and callers dispatch by type.

Two forms, one class:
  * located (``line`` is an int, the default 1:1): an error in a source text;
    ``str()`` is exactly ``FILE:LINE:COL: message``;
  * unlocated (``line`` is None; subclasses of ``Unlocated``): an error with no source
    position (a compiler, a run, a file, a server); ``str()`` is exactly the message, the
    same text the error had before it joined the hierarchy.
"""
from __future__ import annotations


class DojoError(Exception):
    """A tool-chain refusal; str() gives ``FILE:LINE:COL: message``, or just the message
    when ``line`` is None (an unlocated error)."""

    def __init__(self, message: str, line: int | None = 1, col: int | None = 1,
                 filename: str | None = "<input>"):
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col
        self.filename = filename

    def located(self, filename: str) -> "DojoError":
        """The same error in ``filename``; an unlocated error is returned as it is."""
        if self.line is None:
            return self
        return DojoError(self.message, self.line, self.col, filename)

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.filename}:{self.line}:{self.col}: {self.message}"


class Unlocated(DojoError):
    """A DojoError with no source position: ``str()`` and ``.message`` are exactly the text
    it was raised with (``str(message)`` when that is not a string)."""

    def __init__(self, message: object = ""):
        super().__init__(message, None, None, None)
        self.message = str(message)


class CheckErrors(DojoError):
    """Several checker errors at once; str() gives one located line per error."""

    def __init__(self, errors: list):
        first = errors[0]
        super().__init__(first.message, first.line, first.col, first.filename)
        self.errors = list(errors)

    def located(self, filename: str) -> "CheckErrors":
        return CheckErrors([e.located(filename) for e in self.errors])

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)

"""Located errors: every refusal of the IR tool chain is one of these, never a traceback."""
from __future__ import annotations


class DojoError(Exception):
    """An error at FILE:LINE:COL; str() gives the exact `FILE:LINE:COL: message` form."""

    def __init__(self, message: str, line: int = 1, col: int = 1, filename: str = "<input>"):
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col
        self.filename = filename

    def located(self, filename: str) -> "DojoError":
        return DojoError(self.message, self.line, self.col, filename)

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}: {self.message}"


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

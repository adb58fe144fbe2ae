"""Which IR statement each line of the generated C comes from, recorded on the side.

``generate_c_mapped(program, target=None) -> MappedC`` returns the same text as
``generate_c(program, target)`` (byte for byte: the map never touches the text) and, per C
line, the line of ``print_program(program)`` of the statement it was generated for:

* a loop's header, its pragmas and its closing brace map to the loop's line; the lines of
  its body map to the statements of the body (the innermost statement being generated);
* a vectorized loop's explicit lowering maps its loops to the IR loop and the lines that
  compute one of its assignments (its vector update, accumulators, reduction) to it;
* an outlined parallel function maps like the loop it holds;
* lines generated for no statement (the banner, includes, helpers, the size constants, a
  function's braces) map to None.

How: while generating, ``CGenerator.emit`` tags each line with the statement being
generated (``origin``); a tagged line is a ``str`` subclass that keeps its tag when text
is prepended or appended (``INDENT + line``), so the code generator stays unaware of it.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import NamedTuple

from ..printer import statement_lines


class MappedC(NamedTuple):
    """Generated C and, for line k + 1 of ``text``, ``ir_lines[k]`` (an IR line or None)."""
    text: str
    ir_lines: tuple

    def c_lines_of(self, ir_line: int) -> list:
        """The 1-based C lines generated for one IR line."""
        return [k + 1 for k, n in enumerate(self.ir_lines) if n == ir_line]


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


def _resolver(program):
    """A function: the origin stack of a line -> its IR line (or None)."""
    by_id = {}
    for s in statement_lines(program):
        by_id.setdefault(id(s.stmt), []).append(s)

    def resolve(stack):
        for depth in range(len(stack) - 1, -1, -1):
            found = by_id.get(id(stack[depth]))
            if not found:
                continue
            if len(found) == 1:
                return found[0].line
            # the same statement object twice in the tree: the one inside the enclosing loops
            outer = {id(s) for s in stack[:depth]}
            for cand in found:
                if outer <= {id(p) for p in cand.parents}:
                    return cand.line
            return found[0].line
        return None
    return resolve


def ir_lines_of(program, pieces) -> tuple:
    """The IR line of every text line in ``"\\n".join(pieces)`` (see the module docstring)."""
    resolve = _resolver(program)
    out = []
    for piece in pieces:
        origin = getattr(piece, "origin", None)
        line = resolve(origin) if origin else None
        out.extend([line] * (piece.count("\n") + 1))
    return tuple(out)


def generate_c_mapped(program, target=None, function_name: str = "dojo_kernel") -> MappedC:
    """``generate_c``'s text with the IR line of each of its lines (module docstring)."""
    from .c import CGenerator
    from .targets import get_target
    gen = CGenerator(program, get_target(target), function_name)
    text = gen.generate()
    ir_lines = ir_lines_of(program, gen.pieces)
    n = len(text.split("\n"))
    return MappedC(text, ir_lines[:n] + (None,) * max(0, n - len(ir_lines)))


__all__ = ["MappedC", "generate_c_mapped"]

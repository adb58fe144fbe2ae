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

How: while generating, ``CGenerator.emit`` tags each line (``origins.py``) with the statement being
generated (``origin``); a tagged line is a ``str`` subclass that keeps its tag when text
is prepended or appended (``INDENT + line``), so the code generator stays unaware of it.
"""
from __future__ import annotations

from typing import NamedTuple

from ..printer import statement_lines
from .c import CGenerator
from .targets import get_target


class MappedC(NamedTuple):
    """Generated C and, for line k + 1 of ``text``, ``ir_lines[k]`` (an IR line or None)."""
    text: str
    ir_lines: tuple

    def c_lines_of(self, ir_line: int) -> list:
        """The 1-based C lines generated for one IR line."""
        return [k + 1 for k, n in enumerate(self.ir_lines) if n == ir_line]


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
    gen = CGenerator(program, get_target(target), function_name)
    text = gen.generate()
    ir_lines = ir_lines_of(program, gen.pieces)
    n = len(text.split("\n"))
    return MappedC(text, ir_lines[:n] + (None,) * max(0, n - len(ir_lines)))


__all__ = ["MappedC", "generate_c_mapped"]

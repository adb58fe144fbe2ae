"""Steps files and their replay (DESIGN.md section 9).

A steps file holds one step per line in the text form that ``actions`` prints;
``#`` starts a comment (to the end of the line); blank lines are ignored.

Guarantees:
  * ``read_steps(path)`` returns ``[(lineno, text), ...]`` with 1-based line
    numbers of the file and each text stripped, inner whitespace collapsed to
    single spaces; an unreadable or non-text file is a DojoError located in it
    (an empty file is simply no steps).
  * ``replay(program, steps, filename)`` applies the steps in order with
    ``dojo_core.transforms.apply_step`` (through the shared prefix cache) and returns the final Program; the
    first step that does not apply raises
    ``DojoError("step 'TEXT': REASON", lineno, 1, filename)``.  The input
    program is never modified (the IR is immutable).
"""
from __future__ import annotations

from .errors import DojoError
from .replay_cache import SHARED
from .source import read_text, source_lines

MAX_STEPS = 2000        # the most steps a schedule may have (a history, a job, a steps file)


def parse_steps(text: str) -> list[tuple[int, str]]:
    """(lineno, step text) for each non-blank, non-comment line of text."""
    steps = []
    for lineno, line in enumerate(source_lines(text), start=1):
        step = " ".join(line.split("#", 1)[0].split())
        if step:
            steps.append((lineno, step))
    return steps


def read_steps(path) -> list[tuple[int, str]]:
    """The steps of a steps file, or a DojoError located in it."""
    return parse_steps(read_text(path, allow_empty=True))


def replay(program, steps, filename: str = "<steps>"):
    """Apply the steps ((lineno, text) pairs, or bare texts numbered from 1) to program,
    through the shared prefix cache (``dojo_core.replay_cache``)."""
    numbered = [item if isinstance(item, tuple) else (index, item)
                for index, item in enumerate(steps, start=1)]
    done = 0
    try:
        for program in SHARED.walk(program, [text for _, text in numbered]):
            done += 1
    except DojoError as exc:
        lineno, text = numbered[done]
        raise DojoError(f"step '{text}': {exc.message}", lineno, 1, filename) from None
    return program

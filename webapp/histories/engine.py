"""The web app's view of dojo_core: cached replay, actions, code generation, highlighting.

Everything here is a pure function of texts (no models), cached in process:

    ENGINE_VERSION                         pins the engine that replayed a history
    root_program(source)                   the checked Program of a root (DojoError if invalid)
    replay(source, texts)                  the Program after the step texts (NotApplicable
                                           names the step that fails)
    line_refs(ir_text)                     {line: ref} for loop headers (iterator) and
                                           statements (sN), the names actions use
    generated(program, target)             (code, None) or (None, reason) for "c" / "cuda"
    highlighted(text, language)            HTML per line ("dojo", "c", "cuda")

It uses only dojo_core's public API (``dojo_core/__init__.py``); the replay prefix cache is
dojo_core's, shared with the agents that run in this process.  Programs are immutable, so the
caches share them freely.  The diffs the editor shows are in ``diffs.py``.
"""
from __future__ import annotations

import hashlib
import logging
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pygments import format as pyg_format
from pygments.formatters import HtmlFormatter
from pygments.lexers import CLexer, CudaLexer

import dojo_core
from dojo_core import (MAX_STEPS, DojoLexer, actions, canonical, generate, load, parse,
                       ref_kind, refs_in, statement_lines)
from dojo_core import line_refs as printer_line_refs
from dojo_core import replay as replay_program

log = logging.getLogger(__name__)

MAX_SOURCE_BYTES = 64 * 1024
MAX_ACTION_CHARS = 300


def _engine_version() -> str:
    root = Path(dojo_core.__file__).resolve().parent
    h = hashlib.sha256()
    files = sorted(p for p in root.glob("*.py")) + sorted((root / "transforms").glob("*.py"))
    for path in files:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    try:
        v = version("perfdojo")
    except PackageNotFoundError:
        v = "0"
    return f"{v}+{h.hexdigest()[:10]}"


ENGINE_VERSION = _engine_version()


@lru_cache(maxsize=256)
def root_program(source: str):
    """The checked Program of a root source (raises DojoError located in <source>)."""
    return load(source, "<source>")


def replay(source: str, texts: tuple):
    """The Program after applying ``texts`` to the root (NotApplicable names the failing
    step's reason); prefixes come from dojo_core's shared replay cache."""
    return replay_program(root_program(source), tuple(texts))


@lru_cache(maxsize=1024)
def print_text(program) -> str:
    return canonical(program)


@lru_cache(maxsize=512)
def actions_of(program) -> tuple:
    return tuple(actions(program))


@lru_cache(maxsize=512)
def line_refs(ir_text: str) -> dict:
    """{line number: ref} for every loop header and assignment of a text (at the lines
    the parser located them; the names are the printer's)."""
    try:
        program = parse(ir_text)
    except Exception:                                    # noqa: BLE001 - display only
        return {}
    return {s.stmt.loc.line: s.ref for s in statement_lines(program) if s.stmt.loc is not None}


@lru_cache(maxsize=512)
def program_line_refs(program) -> dict:
    """line_refs of canonical(program), without parsing (the printer's line_refs)."""
    return printer_line_refs(program)


# ----------------------------------------------------------------------------- code generation

TARGETS = {"c": ("C", "c"), "cuda": ("CUDA", "cu")}


@lru_cache(maxsize=512)
def generated(program, target: str) -> tuple:
    """(source, None) or (None, why not) for target "c" (this machine's CPU) or "cuda"."""
    if target not in TARGETS:
        return None, f"unknown target {target!r}"
    try:
        return generate(program, None if target == "c" else target), None
    except Exception as exc:                             # noqa: BLE001 - shown, not raised
        msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return None, f"{TARGETS[target][0]} code generation failed: {msg}"


# ----------------------------------------------------------------------------- highlighting

@lru_cache(maxsize=1024)
def highlighted(text: str, language: str) -> tuple:
    """HTML per line of text ("dojo", "c" or "cuda")."""
    lines = text.splitlines()
    if not lines:
        return ()
    if language == "dojo":
        lexer = DojoLexer()
    elif language == "cuda":
        lexer = CudaLexer(stripnl=False, ensurenl=False)
    else:
        lexer = CLexer(stripnl=False, ensurenl=False)
    out = pyg_format(lexer.get_tokens("\n".join(lines) + "\n"), HtmlFormatter(nowrap=True)).split("\n")
    out = out[:len(lines)] + [""] * max(0, len(lines) - len(out))
    return tuple(out)

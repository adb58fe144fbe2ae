"""The web app's view of dojo_core: cached replay, actions, code generation, diffs.

Everything here is a pure function of texts (no models), cached in process:

    ENGINE_VERSION                         pins the engine that replayed a history
    root_program(source)                   the checked Program of a root (DojoError if invalid)
    replay(source, texts)                  the Program after the step texts (NotApplicable
                                           names the step that fails)
    line_refs(ir_text)                     {line: ref} for loop headers (iterator) and
                                           statements (sN), the names actions use
    generated(program_text, target)        (code, None) or (None, reason) for "c" / "cuda"
    unified_rows(a, b), split_rows(a, b)   difflib diffs as rows for the templates

Programs are immutable, so the caches share them freely.
"""
from __future__ import annotations

import difflib
import hashlib
import html
import logging
import re
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pygments import format as pyg_format
from pygments.formatters import HtmlFormatter
from pygments.lexers import CLexer, CudaLexer

import dojo_core
from dojo_core import ir
from dojo_core.codegen.c import generate_c
from dojo_core.codegen.cuda import generate_cuda
from dojo_core.highlight import DojoLexer
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.source import load_source
from dojo_core.transforms import actions, apply_step

log = logging.getLogger(__name__)

MAX_SOURCE_BYTES = 64 * 1024
MAX_STEPS = 2000
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
    return load_source(source, "<source>")


@lru_cache(maxsize=4096)
def replay(source: str, texts: tuple):
    """The Program after applying ``texts`` to the root; the prefix is cached too."""
    if not texts:
        return root_program(source)
    return apply_step(replay(source, texts[:-1]), texts[-1])


@lru_cache(maxsize=1024)
def print_text(program) -> str:
    return print_program(program)


@lru_cache(maxsize=512)
def actions_of(program) -> tuple:
    return tuple(actions(program))


def refs_in(text: str) -> set:
    """The loop and statement names an action text mentions (its words)."""
    return set(text.replace(",", " ").split()[1:])


@lru_cache(maxsize=512)
def line_refs(ir_text: str) -> dict:
    """{line number: ref} for every loop header and assignment of a canonical text."""
    try:
        program = parse(ir_text)
    except Exception:                                    # noqa: BLE001 - display only
        return {}
    refs = {}
    n = 0
    for stmt in ir.walk_stmts(program.body):
        if stmt.loc is None:
            continue
        if isinstance(stmt, ir.Loop):
            refs[stmt.loc.line] = stmt.iterator
        elif isinstance(stmt, ir.Assign):
            refs[stmt.loc.line] = f"s{n}"
            n += 1
        elif isinstance(stmt, ir.Local):
            refs[stmt.loc.line] = stmt.name
    return refs


@lru_cache(maxsize=512)
def program_line_refs(program) -> dict:
    """line_refs of print_program(program), without parsing: the canonical printer puts
    the doc comments, the kernel line, one line per array, a blank line, then one line per
    statement (a loop's header before its body)."""
    line = len(program.doc) + 1 + len(program.arrays) + (1 if program.body else 0)
    refs = {}
    n = 0

    def walk(body):
        nonlocal line, n
        for stmt in body:
            line += 1
            if isinstance(stmt, ir.Loop):
                refs[line] = stmt.iterator
                walk(stmt.body)
            elif isinstance(stmt, ir.Assign):
                refs[line] = f"s{n}"
                n += 1
            elif isinstance(stmt, ir.Local):
                refs[line] = stmt.name
    walk(program.body)
    return refs


def ref_kind(ref: str) -> str:
    return "statement" if re.fullmatch(r"s\d+", ref) else "loop"


# ----------------------------------------------------------------------------- code generation

TARGETS = {"c": ("C", "c"), "cuda": ("CUDA", "cu")}
GENERATORS = {"c": generate_c, "cuda": generate_cuda}


@lru_cache(maxsize=512)
def generated(program, target: str) -> tuple:
    """(source, None) or (None, why not) for target "c" or "cuda"."""
    gen = GENERATORS.get(target)
    if gen is None:
        return None, f"unknown target {target!r}"
    try:
        return gen(program), None
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


# ----------------------------------------------------------------------------- diffs

def _hl(lines, language):
    return highlighted("\n".join(lines) + "\n", language) if lines else ()


def split_rows(a: str, b: str, language: str = "dojo", context: int = 3) -> list:
    """Side-by-side rows: dicts with kind (same, change, add, del, skip), line numbers and
    highlighted HTML of both sides; runs of unchanged lines longer than 2*context+1 are
    folded into one ``skip`` row.  [] when the texts are equal."""
    al, bl = a.splitlines(), b.splitlines()
    if al == bl:
        return []
    ah, bh = _hl(al, language), _hl(bl, language)
    rows = []
    sm = difflib.SequenceMatcher(None, al, bl, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            n = i2 - i1
            if n > 2 * context + 1:
                keep_head = context if i1 > 0 else 0
                keep_tail = context if i2 < len(al) else 0
                for k in range(keep_head):
                    rows.append(_same(i1 + k, j1 + k, ah, bh))
                rows.append({"kind": "skip", "count": n - keep_head - keep_tail})
                for k in range(n - keep_tail, n):
                    rows.append(_same(i1 + k, j1 + k, ah, bh))
            else:
                for k in range(n):
                    rows.append(_same(i1 + k, j1 + k, ah, bh))
        else:
            left = list(range(i1, i2))
            right = list(range(j1, j2))
            for k in range(max(len(left), len(right))):
                li = left[k] if k < len(left) else None
                ri = right[k] if k < len(right) else None
                kind = "change" if li is not None and ri is not None else ("del" if li is not None else "add")
                rows.append({"kind": kind,
                             "a_no": li + 1 if li is not None else None,
                             "a_html": ah[li] if li is not None else "",
                             "b_no": ri + 1 if ri is not None else None,
                             "b_html": bh[ri] if ri is not None else ""})
    return rows


def _same(i, j, ah, bh):
    return {"kind": "same", "a_no": i + 1, "a_html": ah[i], "b_no": j + 1, "b_html": bh[j]}


def unified_rows(a: str, b: str, name_a: str = "a", name_b: str = "b", language: str = "dojo",
                 context: int = 3) -> list:
    """Unified diff rows: dicts with kind (file, hunk, add, del, same) and HTML."""
    al, bl = a.splitlines(), b.splitlines()
    if al == bl:
        return []
    ah, bh = _hl(al, language), _hl(bl, language)
    rows = [{"kind": "file", "html": html.escape(f"--- {name_a}")},
            {"kind": "file", "html": html.escape(f"+++ {name_b}")}]
    sm = difflib.SequenceMatcher(None, al, bl, autojunk=False)
    for group in sm.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        rows.append({"kind": "hunk", "html": f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@"})
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                for k in range(a1, a2):
                    rows.append({"kind": "same", "a_no": k + 1, "b_no": b1 + k - a1 + 1, "html": ah[k]})
                continue
            for k in range(a1, a2):
                rows.append({"kind": "del", "a_no": k + 1, "b_no": None, "html": ah[k]})
            for k in range(b1, b2):
                rows.append({"kind": "add", "a_no": None, "b_no": k + 1, "html": bh[k]})
    return rows


def unified_text(a: str, b: str, name_a: str = "a", name_b: str = "b") -> str:
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), name_a, name_b))


def diff_stats(a: str, b: str) -> tuple:
    """(lines added, lines removed)."""
    added = removed = 0
    sm = difflib.SequenceMatcher(None, a.splitlines(), b.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed

"""Line diffs of two code texts for the diff views, with highlighting within lines.

``diff(a, b, language, mode, context=3, ir_b=None) -> Diff`` gives the rows that
``templates/histories/_diff.html`` renders. Guarantees:

* every line is shown whole (no truncation): a row holds the full highlighted line;
* in both modes every line of both texts is in the rows, in order; a run of more than
  ``2 * context + 1`` unchanged lines keeps ``context`` lines at each side and the rest is
  *folded*: a ``skip`` row (``count`` lines, fold ``id``) followed by the folded rows, each
  with ``fold`` set to that id, which the page shows on request;
* a changed line paired with its counterpart (``change`` rows side by side; a removed and an
  added line at the same offset of one change, unified) marks the characters that differ
  in ``<mark class="ch">`` (word-level SequenceMatcher), unless the two lines share less
  than MIN_SIMILAR of their words (then the whole line is the change);
* ``ir_b``: per line of ``b``, the IR line it was generated for (or None), carried by the
  rows of ``b``'s lines as ``b_ir`` (the editor links them to the IR);
* the HTML is escaped text inside Pygments' CSS classes; no tag crosses a line.
"""
from __future__ import annotations

import difflib
import html
import re
from functools import lru_cache
from typing import NamedTuple

from pygments.lexers import CLexer, CudaLexer, GasLexer
from pygments.token import STANDARD_TYPES, Token

from dojo_core import DojoLexer

MIN_SIMILAR = 0.3
_WORD = re.compile(r"\w+|\s+|[^\w\s]")
_LEXERS = {"dojo": DojoLexer, "c": CLexer, "cuda": CudaLexer, "asm": GasLexer}


class Diff(NamedTuple):
    rows: list
    added: int
    removed: int


def _css_class(ttype) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


@lru_cache(maxsize=256)
def line_tokens(text: str, language: str) -> tuple:
    """Per line of ``text``: a tuple of (css class, text) pieces (the lexer sees the whole
    text, so multi-line constructs are coloured right)."""
    lines = text.splitlines()
    if not lines:
        return ()
    lexer = _LEXERS.get(language, CLexer)(stripnl=False, ensurenl=False)
    out, current = [], []
    for ttype, value in lexer.get_tokens("\n".join(lines) + "\n"):
        cls = "" if ttype in Token.Text else _css_class(ttype)
        parts = value.split("\n")
        for k, part in enumerate(parts):
            if k:
                out.append(tuple(current))
                current = []
            if part:
                current.append((cls, part))
    if current:
        out.append(tuple(current))
    out = out[:len(lines)]
    return tuple(out) + ((),) * (len(lines) - len(out))


def render(pieces, marks=()) -> str:
    """HTML of one line's pieces, with the character ranges ``marks`` in <mark class="ch">."""
    chunks, pos, marks = [], 0, sorted(marks)
    for cls, text in pieces:
        start, end = pos, pos + len(text)
        cuts = {start, end}
        for m0, m1 in marks:
            if start < m0 < end:
                cuts.add(m0)
            if start < m1 < end:
                cuts.add(m1)
        cuts = sorted(cuts)
        for c0, c1 in zip(cuts, cuts[1:]):
            chunk = html.escape(text[c0 - start:c1 - start], quote=False)
            if cls:
                chunk = f'<span class="{cls}">{chunk}</span>'
            chunks.append((any(m0 <= c0 and c1 <= m1 for m0, m1 in marks), chunk))
        pos = end
    out, open_mark = [], False
    for marked, chunk in chunks:          # one <mark> per run of marked chunks
        if marked != open_mark:
            out.append('<mark class="ch">' if marked else "</mark>")
            open_mark = marked
        out.append(chunk)
    if open_mark:
        out.append("</mark>")
    return "".join(out)


def changed_ranges(a: str, b: str) -> tuple:
    """(ranges in a, ranges in b): the character ranges where two lines differ, word by
    word; ((), ()) when they share too little to be worth marking."""
    wa, wb = _WORD.findall(a), _WORD.findall(b)
    words = difflib.SequenceMatcher(None, [w for w in wa if not w.isspace()],
                                    [w for w in wb if not w.isspace()], autojunk=False)
    if words.ratio() < MIN_SIMILAR:
        return (), ()
    sm = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    pa = [0]
    for w in wa:
        pa.append(pa[-1] + len(w))
    pb = [0]
    for w in wb:
        pb.append(pb[-1] + len(w))
    ra, rb = [], []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            ra.append((pa[i1], pa[i2]))
        if j2 > j1:
            rb.append((pb[j1], pb[j2]))
    return tuple(ra), tuple(rb)


class _Builder:
    def __init__(self, a, b, language, ir_b):
        self.al, self.bl = a.splitlines(), b.splitlines()
        self.at, self.bt = line_tokens(a, language), line_tokens(b, language)
        self.ir_b = ir_b
        self.folds = 0

    def a_html(self, i, marks=()):
        return render(self.at[i], marks) if i < len(self.at) else ""

    def b_html(self, j, marks=()):
        return render(self.bt[j], marks) if j < len(self.bt) else ""

    def b_ir(self, j):
        if self.ir_b is None or j is None or j >= len(self.ir_b):
            return None
        return self.ir_b[j]

    def marks(self, i, j):
        if i is None or j is None:
            return (), ()
        return changed_ranges(self.al[i], self.bl[j])

    def equal_run(self, rows, i1, i2, j1, context, make):
        """Rows of an unchanged run, the middle folded when it is long."""
        n = i2 - i1
        if n <= 2 * context + 1:
            rows.extend(make(i1 + k, j1 + k, None) for k in range(n))
            return
        head = context if i1 > 0 else 0
        tail = context if i2 < len(self.al) else 0
        rows.extend(make(i1 + k, j1 + k, None) for k in range(head))
        self.folds += 1
        fold = self.folds
        rows.append({"kind": "skip", "count": n - head - tail, "id": fold})
        rows.extend(make(i1 + k, j1 + k, fold) for k in range(head, n - tail))
        rows.extend(make(i1 + k, j1 + k, None) for k in range(n - tail, n))


def diff(a: str, b: str, language: str = "dojo", mode: str = "split", context: int = 3,
         ir_b=None, name_a: str = "a", name_b: str = "b") -> Diff:
    """The rows of the diff of ``a`` and ``b`` (module docstring); no rows when equal."""
    build = _Builder(a, b, language, ir_b)
    al, bl = build.al, build.bl
    if al == bl:
        return Diff([], 0, 0)
    sm = difflib.SequenceMatcher(None, al, bl, autojunk=False)
    rows, added, removed = [], 0, 0
    if mode == "unified":
        rows += [{"kind": "file", "html": html.escape(f"--- {name_a}")},
                 {"kind": "file", "html": html.escape(f"+++ {name_b}")}]
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            make = _same_split(build) if mode == "split" else _same_unified(build)
            build.equal_run(rows, i1, i2, j1, context, make)
            continue
        removed += i2 - i1
        added += j2 - j1
        if mode == "split":
            rows += _change_split(build, i1, i2, j1, j2)
        else:
            rows += _change_unified(build, i1, i2, j1, j2)
    return Diff(rows, added, removed)


def _same_split(build):
    def make(i, j, fold):
        return {"kind": "same", "a_no": i + 1, "a_html": build.a_html(i), "b_no": j + 1,
                "b_html": build.b_html(j), "b_ir": build.b_ir(j), "fold": fold}
    return make


def _same_unified(build):
    def make(i, j, fold):
        return {"kind": "same", "a_no": i + 1, "b_no": j + 1, "html": build.b_html(j),
                "b_ir": build.b_ir(j), "fold": fold}
    return make


def _change_split(build, i1, i2, j1, j2) -> list:
    rows = []
    for k in range(max(i2 - i1, j2 - j1)):
        i = i1 + k if i1 + k < i2 else None
        j = j1 + k if j1 + k < j2 else None
        ma, mb = build.marks(i, j)
        kind = "change" if i is not None and j is not None else ("del" if i is not None else "add")
        rows.append({"kind": kind,
                     "a_no": i + 1 if i is not None else None,
                     "a_html": build.a_html(i, ma) if i is not None else "",
                     "b_no": j + 1 if j is not None else None,
                     "b_html": build.b_html(j, mb) if j is not None else "",
                     "b_ir": build.b_ir(j), "fold": None})
    return rows


def _change_unified(build, i1, i2, j1, j2) -> list:
    dels, adds = [], []
    for k in range(max(i2 - i1, j2 - j1)):
        i = i1 + k if i1 + k < i2 else None
        j = j1 + k if j1 + k < j2 else None
        ma, mb = build.marks(i, j)
        if i is not None:
            dels.append({"kind": "del", "a_no": i + 1, "b_no": None, "html": build.a_html(i, ma),
                         "b_ir": None, "fold": None})
        if j is not None:
            adds.append({"kind": "add", "a_no": None, "b_no": j + 1, "html": build.b_html(j, mb),
                         "b_ir": build.b_ir(j), "fold": None})
    return dels + adds


__all__ = ["Diff", "diff", "changed_ranges", "line_tokens", "render"]

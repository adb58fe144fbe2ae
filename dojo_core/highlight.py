"""A Pygments lexer for the Dojo IR (pure Python; no Django).

    from dojo_core.highlight import DojoLexer, highlight_lines
    DojoLexer()                  # usable with any Pygments formatter
    highlight_lines(text)        # one HTML fragment per source line (CSS classes of HtmlFormatter)

Guarantees:
  * The tokens cover the input exactly: ``"".join(v for _, v in lexer.get_tokens(t)) == t``
    for any text ``t`` without carriage returns (the lexer keeps leading and trailing newlines; ``ensurenl`` is off).
    No input makes it raise; unknown characters become ``Error`` tokens.
  * Token types: ``Keyword`` (kernel, for, in, local, prefetch), ``Keyword.Declaration``
    (the array kinds in/out/inout/temp at the start of a header line), ``Keyword.Type``
    (dtypes), ``Name.Function`` (the kernel's name), ``Name.Variable`` (a loop's iterator
    after ``for``, a declared array or local name, a prefetched array), ``Name.Constant``
    (sizes in the header),
    ``Name.Decorator`` (loop annotations: parallel, vector, unroll, gpu.block.x, ...),
    ``Name.Builtin`` (exp, log, ..., select), ``Keyword.Pseudo`` (memory spaces after ``in``),
    ``Number.Integer`` / ``Number.Float`` (and ``inf``), ``Operator`` (``..``, ``+=``,
    ``max=``, ``//`` ...), ``Punctuation``, ``Comment.Single``, ``Name`` for other names.
  * ``highlight_lines(text)`` returns exactly ``len(text.splitlines())`` fragments; each is
    HTML-escaped and balanced (no span crosses a line).
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (Comment, Error, Keyword, Name, Number, Operator, Punctuation,
                            Whitespace)

__all__ = ["DojoLexer", "highlight_lines", "css"]

DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64", "i8")
FUNCTIONS = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "max", "min", "pow", "select")
ANNOTATION = r"(?:parallel|vector|unroll|gpu\.(?:block|thread)\.[xyz])\b"
NAME = r"[A-Za-z_][A-Za-z0-9_]*"
NUMBER_FLOAT = r"\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+"


class DojoLexer(RegexLexer):
    """Lexer for Dojo IR kernels (``.dojo``)."""

    name = "Dojo IR"
    aliases = ["dojo", "dojo-ir"]
    filenames = ["*.dojo"]
    mimetypes = ["text/x-dojo"]

    def __init__(self, **options):
        options.setdefault("stripnl", False)
        options.setdefault("ensurenl", False)
        super().__init__(**options)

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[^\S\n]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r"(kernel)(\s+)(" + NAME + r")",
             bygroups(Keyword, Whitespace, Name.Function), "sizes"),
            # header declarations: `in  A: f32[N, K]`, `temp T: f32`
            (r"(in|out|inout|temp)([^\S\n]+)(" + NAME + r")([^\S\n]*)(:)",
             bygroups(Keyword.Declaration, Whitespace, Name.Variable, Whitespace, Punctuation),
             "type"),
            (r"(local)([^\S\n]+)(" + NAME + r")([^\S\n]*)(:)",
             bygroups(Keyword, Whitespace, Name.Variable, Whitespace, Punctuation), "type"),
            # `prefetch C[6*i20 + 6..6*i20 + 12, 16*j20..16*j20 + 16]`
            (r"(prefetch)([^\S\n]+)(" + NAME + r")\b",
             bygroups(Keyword, Whitespace, Name.Variable)),
            (r"(for)([^\S\n]+)(" + NAME + r")([^\S\n]+)(in)\b",
             bygroups(Keyword, Whitespace, Name.Variable, Whitespace, Keyword), "loop"),
            include("expr"),       # statements
        ],
        "sizes": [
            (r"\n", Whitespace, "#pop"),
            (r"[^\S\n]+", Whitespace),
            (r"(" + NAME + r")([^\S\n]*)(=)", bygroups(Name.Constant, Whitespace, Operator)),
            (r"\d+", Number.Integer),
            (r"[(),]", Punctuation),
            (r"#[^\n]*", Comment.Single),
            (r"[^\s]", Error),
        ],
        "type": [
            (r"\n", Whitespace, "#pop"),
            (words(DTYPES, suffix=r"\b"), Keyword.Type),
            (r"\[", Punctuation, "dims"),
            (r"(in)([^\S\n]+)(register|stack|shared)\b",
             bygroups(Keyword, Whitespace, Keyword.Pseudo)),
            (r"#[^\n]*", Comment.Single),
            include("expr"),
        ],
        "dims": [
            (r"\n", Whitespace, "#pop:2"),
            (r"\]", Punctuation, "#pop"),
            include("expr"),
        ],
        "loop": [
            (r"\n", Whitespace, "#pop"),
            (ANNOTATION, Name.Decorator),
            (r"#[^\n]*", Comment.Single),
            include("expr"),
        ],
        "expr": [
            (r"[^\S\n]+", Whitespace),
            (r"\\[^\S\n]*\n", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (NUMBER_FLOAT, Number.Float),
            (r"\d+", Number.Integer),
            (r"inf\b", Number.Float),
            (words(FUNCTIONS, suffix=r"(?=[^\S\n]*\()"), Name.Builtin),
            (r"(max=|min=)", Operator),
            (NAME, Name),
            (r"\.\.|\+=|\*=|//|<=|>=|==|!=|[-+*/%<>=]", Operator),
            (r"[()\[\],:.]", Punctuation),
            (r"[^\s]", Error),
        ],
    }


_FORMATTER = None


def _formatter():
    global _FORMATTER
    if _FORMATTER is None:
        from pygments.formatters import HtmlFormatter
        _FORMATTER = HtmlFormatter(nowrap=True)
    return _FORMATTER


def highlight_lines(text: str) -> list:
    """HTML for each line of text (see the module docstring)."""
    from pygments import format as pyg_format

    lines = text.splitlines()
    if not lines:
        return []
    body = "\n".join(lines) + "\n"
    html = pyg_format(DojoLexer().get_tokens(body), _formatter())
    out = html.split("\n")
    # the formatter ends each line with "\n"; the text after the last one is empty
    out = out[:len(lines)]
    while len(out) < len(lines):
        out.append("")
    return out


def css(selector: str = ".dojo-ir") -> str:
    """The Pygments style sheet for highlighted fragments under ``selector``."""
    return _formatter().get_style_defs(selector)

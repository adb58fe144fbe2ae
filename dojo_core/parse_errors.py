"""The parser's error wording: how a token is named in a message ("end of line", "'['"),
what the grammar expected there, and where an indentation error or a missing block really
is.  Used by ``parser.parse`` only; every function is pure over the source text."""
from __future__ import annotations


def describe(tok) -> str:
    """How a message names a token."""
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "_INDENT":
        return "an indented block"
    if tok.type == "_DEDENT":
        return "end of block"
    if tok.type == "$END":
        return "end of file"
    return f"'{tok}'"


EXPECT_NAMES = {"NAME": "a name", "NUMBER": "a number", "NEG_NUMBER": "a number", "INT": "an integer", "_NL": "end of line",
                 "_INDENT": "an indented block", "_DEDENT": "end of block", "COLON": "':'",
                 "LSQB": "'['", "RSQB": "']'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
                 "RANGE": "'..'", "ASSIGN_OP": "an assignment operator", "KIND": "in/out/inout/temp",
                 "EQUAL": "'='", "KERNEL": "'kernel'", "FOR": "'for'", "LOCAL": "'local'",
                 "IN": "'in'", "MINUS": "'-'", "ADD_OP": "'+' or '-'", "MUL_OP": "an operator",
                 "CMP_OP": "a comparison", "DOT": "'.'"}


def expected(exc) -> str:
    """", expected X, Y" for what the grammar accepted where it stopped (up to six), or ""."""
    names = sorted({EXPECT_NAMES.get(t, t.lower()) for t in (getattr(exc, "expected", None) or [])})
    if not names:
        return ""
    if len(names) > 6:
        names = names[:6] + ["..."]
    return f", expected {', '.join(names)}"


def first_code_after(text: str, line: int):
    """(line, col) of the first non-blank, non-comment line after `line`."""
    lines = text.splitlines()
    for n in range(line + 1, len(lines) + 1):
        stripped = lines[n - 1].lstrip(" \t")
        if stripped and not stripped.startswith("#"):
            return n, len(lines[n - 1]) - len(stripped) + 1
    return line, 1


def dedent_line(text: str) -> int:
    """The first line whose indentation matches no enclosing block (for DedentError)."""
    stack = [0]
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        width = len(line) - len(stripped)
        if width > stack[-1]:
            stack.append(width)
            continue
        while width < stack[-1]:
            stack.pop()
        if width != stack[-1]:
            return n
    return 1

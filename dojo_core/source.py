"""Reading kernel and steps files, with clean located refusals.

Guarantees of ``read_text(path)``: it returns the file's text (UTF-8, a leading
BOM dropped, CRLF/CR turned into LF) or raises ``DojoError`` located in that
file, never another exception, for:

    a missing file                    "no such file"
    a directory                       "is a directory"
    an unreadable file                "cannot read file: <reason>"
    more than MAX_BYTES bytes         "file too large (N bytes, limit 1048576)"
    NUL bytes or invalid UTF-8        "not a text file" (located at the first bad byte)
    no text at all (unless allowed)   "empty file"

``load_file(path, sizes=None)`` adds: parse with ``dojo_core.parser.parse``,
apply the size overrides (``Program.with_sizes``; an unknown name is a located
error naming the kernel's sizes), then ``dojo_core.checker.check``.  It returns
a checked Program or raises DojoError (``CheckErrors`` carrying every checker
error when there are several), each located in ``path``.
"""
from __future__ import annotations

import os

from .errors import CheckErrors, DojoError

MAX_BYTES = 1 << 20   # 1 MiB


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, col) of a byte offset, counting columns in bytes."""
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


def source_lines(text: str) -> list:
    """The lines of a source as editors and the IR parser number them: split at \\n, \\r\\n
    and \\r only (``str.splitlines`` also splits at form feeds, U+2028 and the like, which
    would shift every later line number of an error)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def read_text(path, allow_empty: bool = False) -> str:
    """The text of a file, or a DojoError located in it (see the module docstring)."""
    name = str(path)
    try:
        with open(path, "rb") as f:
            try:
                size = os.fstat(f.fileno()).st_size
            except OSError:
                size = 0
            if size > MAX_BYTES:
                raise DojoError(f"file too large ({size} bytes, limit {MAX_BYTES})", 1, 1, name)
            data = f.read(MAX_BYTES + 1)      # a device or pipe may say 0 and never end
    except DojoError:
        raise
    except FileNotFoundError:
        raise DojoError("no such file", 1, 1, name) from None
    except IsADirectoryError:
        raise DojoError("is a directory", 1, 1, name) from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise DojoError(f"cannot read file: {reason}", 1, 1, name) from None
    if len(data) > MAX_BYTES:
        raise DojoError(f"file too large (more than {MAX_BYTES} bytes, limit {MAX_BYTES})", 1, 1, name)
    nul = data.find(b"\0")
    if nul >= 0:
        raise DojoError("not a text file", *_position(data, nul), name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DojoError("not a text file", *_position(data, exc.start), name) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not allow_empty and not text.strip():
        raise DojoError("empty file", 1, 1, name)
    return text


def _relocate(err: DojoError, filename: str) -> DojoError:
    if err.filename == filename:
        return err
    return err.located(filename)


def parse_size_args(values, filename: str) -> dict:
    """{'N': 64, ...} from ['N=64', ...] (the command line's --size); a malformed item is a
    DojoError at FILE:1:1."""
    sizes = {}
    for item in values or ():
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        ok = sep and name.isidentifier() and value.isdigit() and int(value) >= 1
        if not ok:
            raise DojoError(f"--size '{item}': expected NAME=VALUE with a positive integer VALUE",
                            1, 1, filename)
        sizes[name] = int(value)
    return sizes


def parse_sizes(program, sizes: dict, filename: str):
    """program at other sizes; an unknown size name is a DojoError at the kernel header."""
    if not sizes:
        return program
    known = program.size_values
    loc = program.loc
    line, col = (loc.line, loc.col) if loc is not None else (1, 1)
    for name, value in sizes.items():
        if name not in known:
            have = ", ".join(known) or "none"
            raise DojoError(f"unknown size '{name}' in --size (kernel {program.name} has sizes: {have})",
                            line, col, filename)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise DojoError(f"size {name} must be a positive integer, not {value!r}", line, col, filename)
    return program.with_sizes(dict(sizes))


def load_source(text: str, filename: str = "<input>", sizes: dict | None = None,
                budget_s: float | None = None):
    """Parse, instantiate at ``sizes`` and check source text; a checked Program or DojoError.
    ``budget_s`` bounds the checker's time as ``checker.check``'s does (its default when None)."""
    from .checker import check
    from .parser import parse

    try:
        program = parse(text, filename)
    except DojoError as exc:
        raise _relocate(exc, filename) from None
    program = parse_sizes(program, sizes or {}, filename)
    errors = [_relocate(e, filename) for e in check(program, filename, budget_s=budget_s)]
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise CheckErrors(errors)
    return program


def load_file(path, sizes: dict | None = None):
    """The checked Program of a .dojo file, or a DojoError located in it."""
    return load_source(read_text(path), str(path), sizes)


__all__ = ["MAX_BYTES", "read_text", "source_lines", "load_source", "load_file", "parse_sizes"]

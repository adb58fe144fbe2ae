"""The assembly of a generated C kernel, each instruction with the C line it comes from.

``assembly(source, cflags, cc=None) -> Assembly`` compiles one translation unit with the
compiler and flags the harness builds with (``compile.find_compiler``; the harness's
``flags_for(target)`` and its ``-fPIC``) plus ``-g -S``: GCC generates the same code with
and without ``-g`` (a documented guarantee), so the listing is the code that runs, and the
``.loc`` directives of the debug information say which source line each instruction
belongs to. The listing is of the generated kernel alone (the harness appends its timing
entry, which calls the kernel and does not change it).

Guarantees:

* ``Assembly.lines`` holds the code sections only (``.text*``): function and jump-target
  labels and instructions, without directives, debug sections or compiler-internal labels;
  an instruction carries the 1-based line of ``source`` it was generated for, or None
  (code from a header, e.g. an inlined intrinsic, or before any line information);
* a listing is cached on disk beside the compile cache (``compile.cache_dir``), keyed by
  source, compiler and flags, and in the process; a second call compiles nothing;
* errors are ``compile.CompileError`` with a short reason (no compiler, refused, timed out).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from .compile import CompileError, cache_dir, cache_key, compiler_version, find_compiler, run_in_group
from .codegen import get_target
from .harness import flags_for

SOURCE_NAME = "kernel.c"
ASM_FLAGS = ("-fPIC", "-g", "-S")
MAX_LINES = 20000

_LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)")
_FILE = re.compile(r"\.file\s+(\d+)\s+(.*)$")
_LABEL = re.compile(r"^([A-Za-z_.$][\w.$@]*):")
_KEEP_LOCAL_LABEL = re.compile(r"^\.L\d+$")          # jump targets; not .LFB, .LVL, .LBB ...


class AsmLine(NamedTuple):
    text: str               # the label or instruction, tabs expanded
    c_line: int | None      # the source line it was generated for
    label: bool             # a label line (no code of its own)


class Assembly(NamedTuple):
    lines: tuple            # AsmLine, in listing order
    compiler: str           # the compiler's version line
    flags: tuple            # the flags of the compile, ASM_FLAGS included
    truncated: bool         # more than MAX_LINES lines: the rest is left out
    cc: str                 # the compiler's path

    @property
    def command(self) -> str:
        """The compile command, for display."""
        return shlex.join([Path(self.cc).name, *self.flags, SOURCE_NAME])

    def for_c_line(self, c_line: int) -> list:
        """The instructions generated for one source line."""
        return [a for a in self.lines if a.c_line == c_line and not a.label]


def parse_listing(text: str, source_name: str = SOURCE_NAME) -> tuple:
    """(AsmLine tuple, truncated) of an assembler listing with ``.loc`` directives."""
    ours, current, section, stack, previous = set(), None, ".text", [], ".text"
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "//", ";")):
            continue
        if line.startswith("."):
            word = line.split(None, 1)[0].rstrip(",")
            m = _LABEL.match(line)
            if m and word.endswith(":"):
                if section.startswith(".text") and _KEEP_LOCAL_LABEL.match(m.group(1)):
                    out.append(AsmLine(m.group(1) + ":", None, True))
                continue
            if word == ".file":
                fm = _FILE.match(line)
                if fm and Path(shlex.split(fm.group(2))[-1]).name == source_name:
                    ours.add(int(fm.group(1)))
            elif word == ".loc":
                lm = _LOC.match(line)
                if lm:
                    current = int(lm.group(2)) if int(lm.group(1)) in ours else None
            elif word in (".text", ".data", ".bss"):
                previous, section = section, word
            elif word in (".section", ".pushsection"):
                parts = line.split(None, 1)
                name = parts[1].split(",")[0].strip() if len(parts) > 1 else ""
                if word == ".pushsection":
                    stack.append(section)
                previous, section = section, name
            elif word == ".popsection" and stack:
                previous, section = section, stack.pop()
            elif word == ".previous":
                previous, section = section, previous
            continue
        if not section.startswith(".text"):
            continue
        m = _LABEL.match(line)
        if m and not raw[:1].isspace():
            out.append(AsmLine(m.group(1) + ":", None, True))
            continue
        out.append(AsmLine("  " + line.expandtabs(8).replace("\t", " "), current, False))
        if len(out) >= MAX_LINES:
            return tuple(out), True
    return tuple(out), False


def assembly(source: str, cflags=(), cc=None, timeout: float = 60) -> Assembly:
    """The listing of ``source`` compiled with ``cflags`` (see the module docstring)."""
    cc = find_compiler(cc)
    version = compiler_version(cc)
    flags = tuple(cflags) + ASM_FLAGS
    return _cached(source, cc, version, flags, timeout)


def assembly_for(source: str, target=None) -> Assembly:
    """The listing of generated C ``source`` built as ``harness.measure`` builds it for
    ``target`` (a Target; this machine's C target when None): the harness's compiler and
    ``flags_for(target)``.  CompileError without a working compiler."""
    return assembly(source, flags_for(target if target is not None else get_target(None)))


@lru_cache(maxsize=64)
def _cached(source, cc, version, flags, timeout) -> Assembly:
    key = cache_key(source, cc, version, flags)
    root = cache_dir()
    final = root / f"{key[:40]}.asm.json"
    if final.exists():
        try:
            data = json.loads(final.read_text())
            return Assembly(tuple(AsmLine(*a) for a in data["lines"]), version, flags, data["truncated"], cc)
        except (ValueError, KeyError, TypeError):
            pass                                   # a damaged entry is rebuilt
    listing = _compile(source, cc, flags, timeout)
    lines, truncated = parse_listing(listing)
    tmp = root / f".{key[:40]}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"lines": [list(a) for a in lines], "truncated": truncated}))
    os.replace(tmp, final)
    return Assembly(lines, version, flags, truncated, cc)


def _compile(source, cc, flags, timeout) -> str:
    work = tempfile.mkdtemp(prefix="asm-", dir=cache_dir())
    try:
        (Path(work) / SOURCE_NAME).write_text(source)
        try:
            code, text = run_in_group([cc, *flags, "-o", "kernel.s", SOURCE_NAME], work, timeout)
        except OSError as exc:
            raise CompileError(f"cannot run {cc}: {exc}") from None
        except subprocess.TimeoutExpired:
            raise CompileError(f"compile timed out after {timeout:g} s") from None
        out = Path(work) / "kernel.s"
        if code != 0 or not out.exists():
            lines = [l for l in text.splitlines() if "error" in l.lower()] or text.splitlines()
            raise CompileError(f"{Path(cc).name} failed (exit {code}):\n" + "\n".join(lines[:12]))
        return out.read_text(errors="replace")
    finally:
        shutil.rmtree(work, ignore_errors=True)


__all__ = ["AsmLine", "Assembly", "assembly", "assembly_for", "parse_listing", "ASM_FLAGS", "SOURCE_NAME"]

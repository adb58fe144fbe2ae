"""The code of one step as the editor shows it beside the IR: the generated C with the IR
line of each C line, and the assembly of the local build, colour-matched to the C.

    c_with_ir(program)      (MappedC, None) or (None, why not): the C of ``engine.generated``
                            (the same text) and the IR line of each of its lines
    asm_view(program)       the context of templates/histories/_code_asm.html

Guarantees of ``asm_view``:

* the assembly is that of the viewed step's C compiled with the harness's compiler and
  flags for this machine (``dojo_core.asm``); it is cached on disk and in the process;
* every C line with instructions gets a colour (``colour``, 0..PALETTE-1), and so do
  those instructions: the same colour means the same C line; neighbouring C lines get
  different colours;
* each C row carries ``ir`` (the IR line it was generated for, or None) and each
  instruction row ``c`` (its C line, or None);
* a missing compiler, a compile error or a C generation error is ``error``, a sentence for
  the tab, never an exception.
"""
from __future__ import annotations

from functools import lru_cache

from dojo_core import CompileError, assembly
from dojo_core.codegen import generate_c_mapped, get_target

from .diffs import line_tokens, render

PALETTE = 10


@lru_cache(maxsize=256)
def c_with_ir(program) -> tuple:
    """(MappedC, None) or (None, why not) for this machine's C target."""
    try:
        return generate_c_mapped(program, get_target(None)), None
    except Exception as exc:                             # noqa: BLE001 - shown, not raised
        msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return None, f"C code generation failed: {msg}"


def asm_view(program) -> dict:
    """The C and assembly columns of the assembly tab (module docstring)."""
    mapped, why = c_with_ir(program)
    if mapped is None:
        return {"error": why}
    try:
        return _asm_view(program, mapped)
    except CompileError as exc:
        return {"error": f"No assembly: {exc}"}


@lru_cache(maxsize=64)
def _asm_view(program, mapped) -> dict:
    target = get_target(None)
    asm = assembly(mapped.text, target)
    used = sorted({a.c_line for a in asm.lines if a.c_line is not None and not a.label})
    colour = {line: k % PALETTE for k, line in enumerate(used)}
    counts = {}
    for a in asm.lines:
        if a.c_line is not None and not a.label:
            counts[a.c_line] = counts.get(a.c_line, 0) + 1
    c_tokens = line_tokens(mapped.text, "c")
    c_rows = [{"no": k + 1, "html": render(tokens), "ir": mapped.ir_lines[k],
               "colour": colour.get(k + 1), "count": counts.get(k + 1, 0)}
              for k, tokens in enumerate(c_tokens)]
    asm_tokens = line_tokens("\n".join(a.text for a in asm.lines), "asm")
    asm_rows = [{"no": k + 1, "html": render(asm_tokens[k]) if k < len(asm_tokens) else "",
                 "c": None if a.label else a.c_line, "label": a.label,
                 "colour": None if a.label else colour.get(a.c_line)}
                for k, a in enumerate(asm.lines)]
    return {"error": None, "c_rows": c_rows, "asm_rows": asm_rows, "compiler": asm.compiler,
            "command": asm.command, "target": target.name, "truncated": asm.truncated,
            "instructions": sum(counts.values())}


__all__ = ["asm_view", "c_with_ir", "PALETTE"]

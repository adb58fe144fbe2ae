"""dojo_core: the PerfDojo engine, pure Python with numpy (no Django).

Text -> parser -> immutable IR -> transformations -> printer / code generators.

The public API — what the web app, the runner, the agents and the command line import:

    load(text, filename, sizes)   text -> checked Program (a located DojoError otherwise;
                                  budget_s= bounds the checker's time)
    load_file(path, sizes)        the same for a file
    canonical(program)            the canonical text (the printer's)
    replay(program, steps)        the Program after step texts, through one shared prefix cache
    actions(program)              every legal action, deterministic order
    apply_step(program, text)     one step (NotApplicable with the reason when it is not legal)
    explain_at(program, ref)      the actions at a loop or statement and why others are refused
    line_refs(program)            {line of the canonical text: loop / statement name (sN)}
    generate(program, target)     C for a CPU target name, CUDA for "cuda"
    measure(program, inputs, ...) compile, run and time the C code (seconds per call)
    program_hash(program)         the identity of a program's semantics and schedule

and, for tools that show programs: parse (text -> unchecked Program, located errors),
statement_lines, refs_in / ref_kind (the names an action mentions), DojoLexer (Pygments),
MAX_STEPS (the most steps a schedule may have, in a history or a job), MAX_SIZE (the
largest value a size may take), parse_steps (.steps text -> (line, step text) pairs),
text_hash (the sha256 identity of a text: sources, IR, steps), fingerprint_of_hardware
(a runner's or record's hardware description -> its machine key), assembly(c_text, target)
(the assembly of generated C built as ``measure`` builds it, each instruction with its C
line) and CompileError (what ``measure`` and ``assembly`` raise without a working compiler).

Importing this package is cheap: each name loads its module on first use.
"""
from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "load": ("source", "load_source"),
    "load_file": ("source", "load_file"),
    "canonical": ("printer", "print_program"),
    "replay": ("replay_cache", "replay"),
    "actions": ("transforms", "actions"),
    "apply_step": ("transforms", "apply_step"),
    "explain_at": ("transforms", "explain_at"),
    "line_refs": ("printer", "line_refs"),
    "generate": ("codegen", "generate"),
    "measure": ("harness", "measure"),
    "program_hash": ("records", "program_hash"),
    "parse": ("parser", "parse"),
    "statement_lines": ("printer", "statement_lines"),
    "refs_in": ("transforms", "refs_in"),
    "ref_kind": ("transforms", "ref_kind"),
    "DojoLexer": ("highlight", "DojoLexer"),
    "MAX_STEPS": ("steps", "MAX_STEPS"),
    "MAX_SIZE": ("checker", "MAX_SIZE"),
    "parse_steps": ("steps", "parse_steps"),
    "text_hash": ("records", "text_hash"),
    "fingerprint_of_hardware": ("records", "fingerprint_of_hardware"),
    "assembly": ("asm", "assembly_for"),
    "CompileError": ("compile", "CompileError"),
    "DojoError": ("errors", "DojoError"),
    "NotApplicable": ("transforms", "NotApplicable"),
}


def __getattr__(name: str):
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'dojo_core' has no attribute {name!r}") from None
    value = getattr(import_module(f".{module}", __name__), attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = sorted(_EXPORTS)

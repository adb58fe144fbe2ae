"""The IR line of each generated C line (dojo_core/codegen/line_map.py) and the printer's
statement names (printer.line_refs): golden listings, the C text unchanged, every
statement found in the C, on every library kernel and on random walks from them.

Regenerate the golden listings (after reviewing the change!) with
pytest tests/core/test_codegen_line_map.py --update-goldens.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from dojo_core import ir
from dojo_core.codegen import TARGETS, generate_c
from dojo_core.codegen.line_map import generate_c_mapped
from dojo_core.kernels import list_kernels, load_kernel, steps_path
from dojo_core.printer import (line_refs, print_program, statement_lines, statement_number,
                               statement_ref)
from dojo_core.steps import read_steps
from dojo_core.transforms.util import find_ref, ref_of
from dojo_core.walks import random_walk, replay

# parallel (outlined), a local in registers, unroll, explicit vectors
SCHEDULE = ["fission j after s0", "interchange j2 k", "split j2 by 16",
            "accumulate C at k as acc in register", "vectorize j21", "unroll j20", "parallelize i"]


def listing(program, target) -> str:
    """The IR, then each C line with the IR line it maps to (``-`` for none)."""
    mapped = generate_c_mapped(program, target)
    ir_text = print_program(program).splitlines()
    out = ["# IR"] + [f"{k:4} | {line}" for k, line in enumerate(ir_text, start=1)]
    out.append("# C (IR line | C line)")
    for k, line in enumerate(mapped.text.splitlines()):
        n = mapped.ir_lines[k]
        out.append(f"{'-' if n is None else n:>4} | {line}")
    return "\n".join(out) + "\n"


def scheduled(name, steps, sizes=None):
    return replay(load_kernel(name, sizes), steps)


def test_golden_line_map_of_a_scheduled_matmul(golden):
    program = scheduled("matmul", SCHEDULE, {"N": 64, "M": 64, "K": 48})
    text = listing(program, "x86-avx2")
    golden("line_map/matmul_scheduled.txt", text)
    assert "#pragma omp parallel" in text and "__attribute__((vector_size" in text


def test_golden_line_map_of_a_reduction_through_a_private_scalar(golden):
    """``vectorize k`` on matmul falls back to a private scalar on a target without gathers
    (B is strided in k): the rewritten update still maps to the IR's assignment, the copies
    in and out to the loop."""
    program = scheduled("matmul", ["vectorize k"], {"N": 16, "M": 16, "K": 16})
    golden("line_map/matmul_private_reduction.txt", listing(program, "generic"))
    mapped = generate_c_mapped(program, "generic")
    lines = mapped.text.splitlines()
    update = next(k for k, l in enumerate(lines) if "dojo_r1 +=" in l)
    assert mapped.ir_lines[update] == 11           # C[i, j] += A[i, k] * B[k, j]
    copy_in = next(k for k, l in enumerate(lines) if "float dojo_r1 =" in l)
    assert mapped.ir_lines[copy_in] == 10          # for k in 0..K vector:


def test_golden_line_map_of_an_outlined_parallel_loop(golden):
    """An outlined parallel loop: the function's body maps like the loop it holds, and the
    call site in the kernel to the loop."""
    program = scheduled("matmul", ["split i by 4", "parallelize i0"], {"N": 16, "M": 16, "K": 16})
    golden("line_map/matmul_outlined.txt", listing(program, "x86-avx2"))
    mapped = generate_c_mapped(program, "x86-avx2")
    lines = mapped.text.splitlines()
    call = next(k for k, l in enumerate(lines) if "dojo_kernel_par1(dojo_b" in l)
    header = next(k for k, l in enumerate(lines) if "for (int64_t i0 = dojo_lo;" in l)
    assert mapped.ir_lines[call] == mapped.ir_lines[header] == 7   # for i0 in 0..N // 4 parallel:


def test_golden_line_map_of_streaming_stores(golden):
    """The parallel region rewritten around streaming stores keeps its lines' IR lines."""
    program = replay(load_kernel("layernorm"), [t for _, t in read_steps(steps_path("layernorm"))])
    target = replace(TARGETS["x86-avx2"], cache_bytes=1 << 20)
    golden("line_map/layernorm_streaming.txt", listing(program, target))
    mapped = generate_c_mapped(program, target)
    fences = [mapped.ir_lines[k] for k, line in enumerate(mapped.text.splitlines())
              if line.strip() == "dojo_sfence();"]
    assert len(fences) == 2
    assert fences[0] is not None and fences[-1] is None   # a thread's fence: its loop; the kernel's: none


def _walk_states():
    for name in list_kernels():
        program = load_kernel(name)
        texts, _ = random_walk(program, 6, seed=len(name) + 7)
        states = [program]
        for text in texts:
            states.append(replay(states[-1], [text]))
        for state in states:
            yield name, texts, state


def test_text_unchanged_and_every_statement_found_on_walks():
    """On every library kernel and random walks from it: the text is generate_c's, the map
    has one entry per line, maps only to statement lines, and every statement has C lines
    (those of vector loops too)."""
    checked = 0
    for name, texts, state in _walk_states():
        for target in ("x86-avx2", "x86-avx512"):
            try:
                plain = generate_c(state, target)
            except ValueError:
                continue
            mapped = generate_c_mapped(state, target)
            assert mapped.text == plain, (name, texts)
            assert len(mapped.ir_lines) >= len(plain.splitlines())
            refs = line_refs(state)
            used = {n for n in mapped.ir_lines if n is not None}
            assert used <= set(refs), (name, texts, used - set(refs))
            for s in statement_lines(state):
                assert mapped.c_lines_of(s.line), (name, texts, s.line, s.ref)
            checked += 1
    assert checked > 20


def test_line_refs_names_match_the_printed_text_and_the_transformations():
    program = scheduled("matmul", ["split i by 32", "fission j after s0"])
    text = print_program(program).splitlines()
    refs = line_refs(program)
    for line, ref in refs.items():
        stmt, _ = find_ref(program, ref)
        if statement_number(ref) is not None:
            assert ref_of(program, stmt) == ref
            assert "=" in text[line - 1]
        elif isinstance(stmt, ir.Loop):
            assert text[line - 1].lstrip().startswith(f"for {ref} in ")
    assert sorted(r for r in refs.values() if statement_number(r) is not None) == ["s0", "s1"]


@pytest.mark.parametrize("n", [0, 7, 123])
def test_statement_ref_and_number_are_inverse(n):
    assert statement_number(statement_ref(n)) == n
    assert statement_ref(n) == f"s{n}"


@pytest.mark.parametrize("name", ["i", "s", "s1x", "sx1", "S1", "s-1", ""])
def test_statement_number_rejects_other_names(name):
    assert statement_number(name) is None

"""Register tiles in the C generator: the nests that zero, load and store back a local
``in register`` (what ``accumulate ... in register`` makes) are unrolled whole, so that gcc
keeps the tile in registers with no copy in memory; any other nest stays a loop."""
from __future__ import annotations

import platform
import re
import subprocess

import pytest

from dojo_core.codegen import TARGETS, generate_c
from dojo_core.compile import find_compiler
from dojo_core.kernels import load_kernel, steps_path
from dojo_core.steps import read_steps, replay

from kernels_text import matmul_tile_steps

X86 = platform.machine() == "x86_64"


def tiled_matmul(rows: int, cols: int, space: str = " in register"):
    program = load_kernel("matmul", {"N": 96, "M": 128, "K": 32})
    return replay(program, matmul_tile_steps(rows, cols, space))


def pragma_before(text: str, pattern: str) -> list:
    """For each loop header matching ``pattern``, the line before it (stripped)."""
    lines = text.splitlines()
    return [lines[k - 1].strip() for k, line in enumerate(lines)
            if re.search(pattern, line) and line.strip().startswith("for")]


def tile_moves(text: str) -> list:
    """(line before, loop header) of the two loops around each scalar statement that
    loads or stores an element of the tile ``acc`` (its zeroing, loading or storing back)."""
    lines = text.splitlines()
    out = []
    for k, line in enumerate(lines):
        if "acc[" not in line or "dojo_" in line or line.strip().startswith(("for", "float")):
            continue
        indent = len(line) - len(line.lstrip())
        found = 0
        for n in range(k - 1, -1, -1):
            head = lines[n]
            depth = len(head) - len(head.lstrip())
            if depth < indent:
                if not head.strip().startswith("for"):
                    break
                out.append((lines[n - 1].strip(), head.strip()))
                indent, found = depth, found + 1
                if found == 2:
                    break
    return out


def test_the_nests_that_load_and_store_back_a_register_tile_are_unrolled_whole():
    text = generate_c(tiled_matmul(8, 32), "x86-avx512")        # 256 lanes: 16 registers
    moves = tile_moves(text)
    assert len(moves) == 4, text                   # two loops each for the load, the store
    for pragma, header in moves:
        extent = re.search(r"< (\d+);", header).group(1)
        assert pragma == f"#pragma GCC unroll {extent}", (pragma, header)


def test_a_tile_with_more_elements_than_the_registers_hold_stays_a_loop():
    text = generate_c(tiled_matmul(8, 32), "x86-avx2")      # 256 lanes, AVX2 holds 128
    moves = tile_moves(text)
    assert len(moves) == 4, text
    assert all(not pragma.startswith("#pragma GCC unroll") for pragma, _ in moves), moves


def test_a_tile_in_memory_stays_a_loop():
    text = generate_c(tiled_matmul(8, 32, space=""), "x86-avx512")
    moves = tile_moves(text)
    assert len(moves) == 4, text
    assert all(not pragma.startswith("#pragma GCC unroll") for pragma, _ in moves), moves


def test_the_unrolled_register_tile_computes_the_same_product():
    from dojo_core import harness, interp
    from dojo_core.kernels import random_inputs
    program = tiled_matmul(6, 16)
    original = load_kernel("matmul", {"N": 96, "M": 128, "K": 32})
    inputs = random_inputs(original, 3)
    errors = harness.compare(harness.run_c(program, inputs), interp.run(original, inputs),
                             program)
    assert all(e <= 1 for e in errors.values()), errors


@pytest.mark.skipif(not X86, reason="reads x86 assembly (gcc with AVX-512 flags); the host "
                                    "is not x86-64")
def test_the_attention_score_tile_has_no_copy_in_memory(tmp_path):
    """The AVX-512 attention schedule's 6 x 64 tiles: no ``rep stos`` zeroing a copy of the
    tile in memory (left as loops, gcc zeroed one per tile and spilled the registers into it
    to store the tile back)."""
    target = TARGETS["x86-avx512"]
    program = load_kernel("attention")
    program = replay(program, read_steps(steps_path("attention", target)))
    src = tmp_path / "k.c"
    src.write_text(generate_c(program, target))
    asm = tmp_path / "k.s"
    subprocess.run([find_compiler(), *target.cflags, "-mavx512f", "-mavx512vl", "-mfma",
                    "-S", "-o", str(asm), str(src)], check=True)
    text = asm.read_text()
    assert "vfmadd231ps\t%zmm" in text
    assert "rep stos" not in text

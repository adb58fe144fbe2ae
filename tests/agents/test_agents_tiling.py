"""Tile shapes from the target and the dtype (dojo_core/agents/tiling.py) and the tile
macros built from them: no constant fitted to one ISA or dtype."""
from __future__ import annotations

import re

import numpy as np
import pytest

from dojo_core.agents.macros import tile_moves
from dojo_core.agents.tiling import (l1_data_bytes, reduction_blocks, register_tiles,
                                     row_tiles)
from dojo_core.codegen.targets import TARGETS
from dojo_core import interp
from dojo_core.kernels import load_kernel, random_inputs
from dojo_core.printer import print_program
from dojo_core.suite import load as load_suite

CPU_TARGETS = ["x86-avx512", "x86-avx2", "arm-neon", "arm-sve", "riscv-rvv", "generic"]


@pytest.mark.parametrize("name", CPU_TARGETS)
@pytest.mark.parametrize("itemsize", [8, 4, 2, 1])
def test_every_shape_fits_the_registers_and_uses_whole_vectors(name, itemsize):
    target = TARGETS[name]
    shapes = register_tiles(target, itemsize, 512, 512)
    assert shapes
    lanes = target.vector_bytes // itemsize
    for s in shapes:
        assert s.lanes == lanes and s.cols % lanes == 0
        assert s.rows * s.vectors + s.vectors + 1 == s.registers <= target.vector_registers
    assert all(2 * s.vectors + 1 <= target.vector_registers for s in row_tiles(target, itemsize))


def test_avx2_and_avx512_get_their_own_tiles():
    """16 registers of 8 f32 lanes: the 4 x 16 tile of the hand-written AVX2 schedule comes
    first; 32 registers of 16 lanes: the 8 x 32 tile of the AVX-512 one is among the best."""
    avx2 = [(s.rows, s.cols) for s in register_tiles(TARGETS["x86-avx2"], 4, 512, 512)]
    avx512 = [(s.rows, s.cols) for s in register_tiles(TARGETS["x86-avx512"], 4, 512, 512)]
    assert avx2[0] == (4, 16) and (8, 32) not in avx2
    assert (8, 32) in avx512[:2]


def test_a_row_tail_is_preferred_to_a_column_tail():
    """At 512 x 512 on AVX2 f32, 6 x 16 (12 accumulators, a tail of 2 rows) is offered
    before 4 x 24 (more reuse, but a partial vector in every row tile)."""
    shapes = [(s.rows, s.cols) for s in register_tiles(TARGETS["x86-avx2"], 4, 512, 512)]
    assert (6, 16) in shapes
    assert (4, 24) not in shapes or shapes.index((6, 16)) < shapes.index((4, 24))


def test_f64_halves_the_lanes_of_f32():
    f32 = register_tiles(TARGETS["x86-avx2"], 4, 512, 512)
    f64 = register_tiles(TARGETS["x86-avx2"], 8, 512, 512)
    assert [(s.rows, s.cols) for s in f64] == [(s.rows, s.cols // 2) for s in f32]


def test_tail_free_shapes_come_first():
    shapes = register_tiles(TARGETS["x86-avx2"], 4, 200, 220)
    tails = [(200 % s.rows != 0) + (220 % s.cols != 0) for s in shapes]
    assert tails == sorted(tails)


@pytest.mark.parametrize("name", CPU_TARGETS)
def test_reduction_blocks_keep_the_panel_in_half_of_l1(name):
    target = TARGETS[name]
    for cols in (8, 16, 24, 64):
        blocks = reduction_blocks(target, 4, cols)
        assert blocks and blocks[0] * cols * 4 <= l1_data_bytes(target) // 2
        assert 2 * blocks[0] * cols * 4 > l1_data_bytes(target) // 2 or blocks[0] == 1


def _sizes(label):
    return [w.split("/")[1] for w in label.split() if "/" in w]


@pytest.mark.parametrize("name", CPU_TARGETS)
def test_tile_macros_of_an_f64_gemm_fit_each_target(name):
    """PolyBench's gemm in f64 (not a library kernel): every tile's vector columns are a
    whole number of f64 vectors and its accumulators fit the target's registers."""
    target = TARGETS[name]
    program = load_suite("gemm", "f64", {"NI": 64, "NJ": 64, "NK": 64})
    moves = tile_moves(program, target)
    assert moves
    lanes = target.vector_bytes // 8
    for move in moves:
        sizes = _sizes(move.label)
        ta, tb = (int(sizes[0]), int(sizes[1])) if len(sizes) == 3 else (1, int(sizes[0]))
        assert tb % lanes == 0, move.label
        assert ta * (tb // lanes) + tb // lanes + 1 <= target.vector_registers, move.label
    assert any(re.search(r" x k/all", m.label) for m in moves)


@pytest.mark.parametrize("name", ["x86-avx2", "x86-avx512"])
def test_a_reduction_whose_panel_fits_is_not_blocked(name):
    """K = 64 f64: the whole panel of any tile fits half of L1, so every tile runs the whole
    reduction; at K = 1024 it does not, and blocked tiles come too."""
    target = TARGETS[name]
    small = load_suite("gemm", "f64", {"NI": 64, "NJ": 64, "NK": 64})
    assert {_sizes(m.label)[-1] for m in tile_moves(small, target)} == {"all"}
    large = load_suite("gemm", "f64", {"NI": 64, "NJ": 64, "NK": 1024})
    assert len({_sizes(m.label)[-1] for m in tile_moves(large, target)}) > 1


@pytest.mark.parametrize("name", ["x86-avx2", "x86-avx512"])
def test_every_tile_move_replays_where_sizes_leave_tails(name):
    """Sizes that leave tails (36 rows: 8-row tiles) change which steps apply (no
    unroll of a tail loop): each tail pattern gets a structure of its own, so that no move
    offered is illegal (an MCTS rollout used to stop on one)."""
    from dojo_core.walks import replay
    program = load_suite("int8_matmul", "i8", {"M": 36, "N": 64, "K": 44})
    moves = tile_moves(program, TARGETS[name])
    assert moves
    for move in moves:
        replay(program, move.steps)


def test_a_search_session_offers_no_moves_from_illegal_steps():
    from dojo_core.agents.search import Session
    program = load_kernel("matmul", {"N": 8, "M": 8, "K": 8})
    session = Session("test", program, evaluator=None, budget=1)
    assert session.moves(("split nowhere by 2",)) == []
    assert session.moves(())


def test_tiles_loaded_from_the_output_prefetch_its_next_tile():
    """Where the register tile is loaded from C and a loop around it moves to another tile
    of C a row stride away (the b-outer order: the row-tile loop holds the tile), the macro
    prefetches C's next tile there; where the loop around the tile moves along C's rows (a
    stream the hardware follows) it adds none. Derived from the program: every target.
    (Checked on the tiles whose rows are C's rows; AVX-512 also offers tiles with vectors
    along C's columns, where the roles of the two loops swap.)"""
    from dojo_core.walks import replay
    program = load_kernel("matmul", {"N": 96, "M": 64, "K": 64})
    for name in ("x86-avx2", "x86-avx512", "arm-neon"):
        moves = [m for m in tile_moves(program, TARGETS[name])
                 if not m.label.startswith("tile j2/")]
        outer_b = [m for m in moves if "b-outer" in m.label and not m.label.startswith("tile all")]
        assert outer_b, name
        for move in moves:
            texts = [t for t in move.steps if t.startswith("prefetch")]
            if move in outer_b:
                assert len(texts) == 1 and texts[0].startswith("prefetch C at "), move.label
                final = replay(program, move.steps)
                loop = texts[0].split()[-1]
                assert f"for {loop} in" in print_program(final)
            else:
                assert texts == [], move.label


@pytest.mark.parametrize("name", ["x86-avx2", "x86-avx512", "arm-neon"])
def test_tiles_precompute_a_computed_broadcast_operand_at_their_own_sizes(name):
    """gemm's ``alpha * A[i, k]`` is what the row loop of a tile broadcasts: each tile
    precomputes it into a buffer (a load to broadcast instead of a multiply and a shuffle
    per use): with the rows outermost once per row panel, before the column tiles that
    share it, the operand printed with that move's own split factors
    (the structure is built once per tail pattern and resized), and every move replays;
    tiles with vectors along i, whose broadcast operand is B's element, and the library's
    matmul, whose operand is a plain access, get none."""
    from dojo_core.walks import replay
    program = load_suite("gemm", "f32", {"NI": 40, "NJ": 52, "NK": 48})
    moves = tile_moves(program, TARGETS[name])
    rows_by_columns = [m for m in moves if m.label.startswith("tile i2/")]
    assert rows_by_columns
    for move in moves:                 # a tile with vectors along i broadcasts B, a load
        texts = [t for t in move.steps if t.startswith("precompute ")]
        assert len(texts) == (move in rows_by_columns), move.label
        if not texts:
            continue
        rows, _, block = _sizes(move.label)
        assert texts[0].startswith(f"precompute alpha * A[{rows}*i20 + i21, "), \
            (move.label, texts[0])
        if block != "all":
            assert f"{block}*k0 + k1]" in texts[0], (move.label, texts[0])
        text = print_program(replay(program, move.steps))
        assert "+= alpha" not in text and "] = alpha * A[" in text, move.label
        if "b-outer" not in move.label:        # once per row panel, for all its column tiles
            assert texts[0].endswith(f" at i20 as {texts[0].split()[-1]}"), texts[0]
            assert text.index("] = alpha * A[") < text.index("for j20 in"), move.label
    library = load_kernel("matmul", {"N": 32, "M": 32, "K": 32})
    assert not any(t.startswith("precompute ") for m in tile_moves(library, TARGETS[name])
                   for t in m.steps)


def test_the_tiles_of_the_last_rows_and_columns_are_vector_tiles_too():
    """36 rows in 8-row tiles leave 4; 100 columns in 48-wide tiles leave 4: every copy of
    the tile (the full ones, the last columns, the last rows and the corner) reduces in a
    vector loop of constant extent inside rows that are unrolled, so that each copy keeps its
    tile in registers (the last rows' tiles were scalar loops with a min() bound)."""
    from dojo_core import ir
    from dojo_core.walks import replay
    program = load_suite("gemm", "f32", {"NI": 36, "NJ": 100, "NK": 48})
    moves = [m for m in tile_moves(program, TARGETS["x86-avx512"])
             if m.label.startswith("tile i2/8 x j2/48")]
    assert moves
    for move in moves:
        final = replay(program, move.steps)
        tiles = [l for l in ir.loops(final) if len(l.body) == 1
                 and isinstance(l.body[0], ir.Assign) and l.body[0].op == "+="
                 and l.body[0].target.array.startswith("acc")]
        assert len(tiles) == 4, move.label
        assert all("vector" in l.annotations for l in tiles), move.label
        rows = [l for l in ir.loops(final) if len(l.body) == 1 and l.body[0] in tiles]
        assert len(rows) == 4 and all("unroll" in l.annotations for l in rows), move.label


def test_conv2d_tiles_reuse_both_operands():
    """At these sizes conv2d's output row (w, 24 wide) takes one AVX2 vector per tile, its
    filters (32) two: the tiles with vectors along f come first, rows of w, the filter operand staged
    with f last (a vector load, not a gather); the tiles with vectors along w take rows of
    f, not of h (X[c, h + kh, w + kw] varies with h and w: no reuse)."""
    from dojo_core.walks import replay
    program = load_kernel("conv2d", {"N": 1, "C": 4, "H": 6, "W": 24, "F": 32})
    moves = tile_moves(program, TARGETS["x86-avx2"])
    labels = [m.label for m in moves]
    swapped = [l for l in labels if l.startswith("tile w2/")]
    assert swapped and labels[:len(swapped)] == swapped
    assert all(l.endswith("stage Wt") and "x f2/" in l for l in swapped)
    assert all(l.startswith("tile f2/") for l in labels[len(swapped):])
    inputs = random_inputs(program, 0)
    want = interp.run(program, inputs)
    got = interp.run(replay(program, moves[0].steps), inputs)
    np.testing.assert_allclose(got["Y"], want["Y"], rtol=1e-5, atol=1e-5)


K2MM = {"NI": 24, "NJ": 19, "NK": 10, "NL": 20}


def _same_outputs(name, program, state):
    from dojo_core import suite
    inputs = suite.random_inputs(name, program, 0)
    want, got = interp.run(program, inputs), interp.run(state, inputs)
    for array in want:
        np.testing.assert_allclose(got[array], want[array], rtol=1e-9, atol=1e-9)


def test_single_tiles_of_a_gemm_with_a_fused_initialiser_replay():
    """2mm's first GEMM sets tmp to 0 just before its reduction: its tiles fuse that
    initialiser into their loops (which renames the row and column loops) and precompute
    ``alpha * A[..]`` with the indices as the fused loops print them, so every such move
    replays, at every size it is resized to, and computes what the kernel computes."""
    from dojo_core.walks import replay
    program = load_suite("k2mm", "f64", K2MM)
    first = [m for m in tile_moves(program, TARGETS["x86-avx2"], threads=1)
             if m.label.startswith("tile i3/")]
    assert len({_sizes(m.label)[0] for m in first}) >= 2, [m.label for m in first]
    for move in first:
        assert any(t.startswith("fuse ") for t in move.steps), move.label
        assert any(t.startswith("precompute alpha * A[") for t in move.steps), move.label
        _same_outputs("k2mm", program, replay(program, move.steps))


def test_tile_all_stages_the_panel_a_nest_with_vectors_along_its_rows_needs():
    """In 2mm's second GEMM (D[i2, j2] += tmp[i2, k2] * C[k2, j2]) on AVX2 f64, the tiles
    with vectors along i2 reuse most; their column operand tmp is strided along i2, so the
    chain tiles that nest with tmp's panel staged (columns outermost) and the first nest in
    its own form, rows outermost; a second form stages every nest's panel."""
    from dojo_core.walks import replay
    program = load_suite("k2mm", "f64", K2MM)
    chained = [m for m in tile_moves(program, TARGETS["x86-avx2"], threads=1)
               if m.label.startswith("tile all")]
    own = [m for m in chained if m.label.split(" ; ")[1].endswith("b-outer stage tmp")
           and "stage" not in m.label.split(" ; ")[0]]
    every = [m for m in chained if all(part.endswith(" b-outer stage " + array) for part, array
                                       in zip(m.label.split(" ; "), ("B", "tmp")))]
    assert own and every, [m.label for m in chained]
    assert chained[0] in own
    for move in (own[0], every[0]):
        assert any(t.startswith("stage tmp at ") for t in move.steps), move.label
        _same_outputs("k2mm", program, replay(program, move.steps))


@pytest.mark.parametrize("name", ["x86-avx2", "x86-avx512"])
def test_no_two_tile_moves_are_the_same_steps(name):
    """Each tile move is a distinct program (a duplicate costs a measurement and finds
    nothing): a staged variant exists only where there is a loop to stage the panel at, so
    a whole reduction with the rows outermost has no "stage" twin."""
    for program in (load_suite("gemm", "f32", {"NI": 40, "NJ": 52, "NK": 48}),
                    load_suite("k2mm", "f64", K2MM),
                    load_kernel("matmul", {"N": 48, "M": 64, "K": 32})):
        moves = tile_moves(program, TARGETS[name], threads=1)
        seen = {}
        for move in moves:
            assert move.steps not in seen, (move.label, seen.get(move.steps))
            seen[move.steps] = move.label
        assert not any(m.label.endswith("/all stage B") for m in moves)

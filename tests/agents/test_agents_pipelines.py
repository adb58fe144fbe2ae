"""The pipelined-rows macro (dojo_core/agents/pipelines.py): a loop whose body runs several
passes over a row is pipelined at each cut, the statements between the passes moved after
the delayed pass, and the two passes fused; with several threads the rows are split into
chunks first; kernels without such a loop get no move; outputs unchanged, interpreted and
compiled."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import harness, interp
from dojo_core.agents.macros import macro_moves
from dojo_core.agents.pipelines import pipeline_moves
from dojo_core.kernels import load_kernel, random_inputs
from dojo_core.printer import print_program
from dojo_core.walks import replay

ROWS = {"N": 6, "M": 40}


def test_softmax_gets_a_move_per_cut_and_one_with_the_row_kept_in_a_local():
    moves = {m.label: m.steps for m in pipeline_moves(load_kernel("softmax", ROWS), threads=1)}
    assert [label for label in moves if "prefetching" not in label] == [
        "pipeline i from k", "pipeline i from k stage Y", "pipeline i from l",
        "pipeline i from l stage Y"]
    staged = moves["pipeline i from l stage Y"]
    assert staged[:4] == ("stage Y at i as Yt", "fuse l k1", "pipeline i from l", "fuse k l")
    assert "vectorize k" in staged and "vectorize le" in staged
    # the row buffer, used by the delayed passes only, is declared ahead of the first stage,
    # so that the statement between the passes can move past the delayed one
    assert moves["pipeline i from k stage Y"][2:5] == ("pipeline i from k", "reorder s5 k",
                                                       "fuse j k")
    assert not any(s.startswith("parallelize") for steps in moves.values() for s in steps)


def test_each_cut_also_comes_with_the_next_row_prefetched_in_its_first_stage():
    """Cut at k, the first stage is the max pass j: it asks for row i + 1 of X, and once
    pipelined and fused (rows i and i - 1 in one loop) the vector loop still asks for
    that row alone. Cut at l, X's next row is asked for in j (its first pass), not in k
    too, and Y's, written in k, in k."""
    program = load_kernel("softmax", ROWS)
    moves = {m.label: m.steps for m in pipeline_moves(program, threads=1)}
    steps = moves["pipeline i from k prefetching X"]
    assert steps[:4] == ("prefetch X at j ahead i", "pipeline i from k", "reorder s7 k",
                         "fuse j k")
    assert moves["pipeline i from l prefetching X, Y"][:2] == ("prefetch X at j ahead i",
                                                              "prefetch Y at k ahead i")
    text = print_program(replay(program, list(steps)))
    assert "  for j in 0..M vector:\n    prefetch X[i + 1, j]\n" in text
    assert len(moves) == 8


def test_statements_between_the_passes_move_after_the_delayed_pass():
    moves = {m.label: m.steps for m in pipeline_moves(load_kernel("layernorm", ROWS), threads=1)}
    # var = var / M updates this row's slot; the delayed pass l reads the row before's
    assert moves["pipeline i from l"][:3] == ("pipeline i from l", "reorder s11 l", "fuse k l")


def test_several_threads_share_chunks_of_rows():
    moves = pipeline_moves(load_kernel("softmax", {"N": 64, "M": 40}), threads=2)
    moves = {m.label: m.steps for m in moves}
    steps = moves["pipeline i from l in chunks of 8"]                            # 64 / (4 x 2)
    assert steps[:2] == ("split i by 8", "pipeline i1 from l")
    assert steps[-1] == "parallelize i0"
    assert moves["pipeline i from l prefetching X, Y in chunks of 8"][2:4] == steps[:2]
    # 60 rows, 3 threads: 12 chunks or more, of a size that divides 60 (5: 12 chunks)
    moves = pipeline_moves(load_kernel("softmax", {"N": 60, "M": 40}), threads=3)
    assert {m.label: m.steps for m in moves}["pipeline i from l in chunks of 5"][:2] == (
        "split i by 5", "pipeline i1 from l")


def test_no_move_without_a_loop_of_two_passes():
    assert pipeline_moves(load_kernel("matmul", {"M": 8, "N": 8, "K": 8}), threads=1) == []
    assert pipeline_moves(load_kernel("relu"), threads=1) == []


def test_the_macros_offer_it():
    labels = [m.label for m in macro_moves(load_kernel("softmax", ROWS), threads=1)]
    assert "pipeline i from l stage Y" in labels


@pytest.mark.parametrize("name", ["softmax", "layernorm", "log_softmax", "rmsnorm", "attention"])
@pytest.mark.parametrize("threads", [1, 2])
def test_every_move_keeps_the_outputs_interpreted_and_compiled(name, threads):
    program = load_kernel(name, {"N": 16, "M": 24} if name != "attention" else {"S": 16, "D": 8})
    moves = pipeline_moves(program, threads=threads)
    assert moves
    inputs = random_inputs(program, 5)
    want = interp.run(program, inputs)
    for move in moves:
        state = replay(program, list(move.steps))
        got = interp.run(state, inputs)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=1e-6, err_msg=move.label)
        assert harness.verify(state, program, inputs, reference="interp")["verified"], move.label

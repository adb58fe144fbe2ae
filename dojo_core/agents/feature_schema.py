"""The names and meanings of the learned agents' features: the schema of their vectors.

Owns ``STATE_FEATURES`` and ``ACTION_FEATURES`` (``(name, meaning)`` pairs, in vector
order), the names and lengths derived from them (``FEATURE_NAMES``/``FEATURE_DIM``,
``ACTION_NAMES``/``ACTION_DIM``), the transformation kinds and memory spaces an action
vector one-hot encodes, and ``MACRO_PREFIX``, the text that marks a macro move.

Guarantees: plain constants, no computation and no imports; the order of every tuple is
the order of the vectors ``features.py`` returns, so saved weights (``qagent.npz``) stay
valid exactly as long as these tuples are unchanged.
"""
from __future__ import annotations

STATE_FEATURES = (
    ("loops", "number of loops"),
    ("max_depth", "deepest loop nesting"),
    ("mean_assign_depth", "mean number of loops around an assignment"),
    ("assigns", "number of assignments"),
    ("reductions", "assignments with a reduction op (+=, *=, max=, min=)"),
    ("top_level", "statements at the top of the body"),
    ("parallel_loops", "loops annotated parallel"),
    ("vector_loops", "loops annotated vector"),
    ("unroll_loops", "loops annotated unroll"),
    ("gpu_loops", "loops bound to a GPU axis"),
    ("parallel_outermost", "parallel loops at depth 0"),
    ("log2_parallel_iters", "log2(1 + largest iteration count of an outermost parallel loop)"),
    ("vector_contiguous_frac", "share of accesses in vector loops that are unit-stride or invariant"),
    ("log2_vector_extent", "log2(1 + mean extent of vector loops)"),
    ("log2_unrolled_iters", "log2(1 + total extent of unrolled loops)"),
    ("tail_loops", "loops whose bound has a min() (split tails)"),
    ("log2_max_extent", "log2(1 + largest loop extent)"),
    ("log2_innermost_extent", "log2(1 + mean extent of innermost loops)"),
    ("inner_unit_frac", "share of accesses (weighted by executions) unit-stride in their innermost loop"),
    ("inner_invariant_frac", "share of accesses invariant in their innermost loop"),
    ("inner_strided_frac", "share of accesses with another stride in their innermost loop"),
    ("locals", "local buffers"),
    ("locals_register", "locals in register"),
    ("locals_stack", "locals in stack"),
    ("locals_shared", "locals in GPU shared memory"),
    ("locals_default", "locals without a memory space"),
    ("log2_local_bytes", "log2(1 + total bytes of locals)"),
    ("log2_local_bytes_max", "log2(1 + bytes of the largest local)"),
    ("locals_over_l1", "locals larger than 32 KiB"),
    ("locals_over_l2", "locals larger than 1 MiB"),
    ("log2_local_allocs", "log2(1 + times locals are (re)entered: their scope's trip count)"),
    ("mean_local_depth", "mean loop depth of local declarations"),
    ("log2_flops", "log2(1 + arithmetic operations executed)"),
    ("log2_transcendentals", "log2(1 + exp/log/sqrt/rsqrt/tanh/erf/pow calls executed)"),
    ("log2_divisions", "log2(1 + divisions executed)"),
    ("log2_global_access_bytes", "log2(1 + bytes of in/out/temp array accesses executed)"),
    ("log2_local_access_bytes", "log2(1 + bytes of local accesses executed)"),
    ("log2_array_bytes", "log2(1 + declared bytes of the kernel's arrays)"),
    ("log2_intensity", "log2_flops - log2_array_bytes"),
    ("log2_executions", "log2(1 + assignments executed)"),
    ("inner_assigns_mean", "mean assignments directly in an innermost loop"),
    ("perfect_depth_max", "deepest perfect loop nest"),
    ("log2_outer_extent", "log2(1 + extent of the first top-level loop)"),
    ("carried_reduction_frac", "share of reductions whose target is invariant in the innermost loop"),
    ("gpu_block_loops", "loops bound to gpu.block.*"),
    ("gpu_thread_loops", "loops bound to gpu.thread.*"),
    ("log2_inner_footprint", "log2(1 + largest bytes one full run of an innermost loop touches)"),
    ("inner2_over_l1", "1 if some two-deep inner nest touches more than 32 KiB"),
)
FEATURE_NAMES = tuple(name for name, _ in STATE_FEATURES)
FEATURE_DIM = len(STATE_FEATURES)

KINDS = ("split", "interchange", "merge", "fuse", "fission", "reorder", "hoist",
         "parallelize", "vectorize", "unroll", "bind", "stage", "accumulate", "layout",
         "inline", "materialize")
SPACES = ("none", "register", "stack", "shared")
ACTION_FEATURES = tuple((f"kind_{k}", f"the step is a {k}") for k in KINDS) + (
    ("kind_other", "a kind not listed (a newer transformation)"),
    ("loop_log2_extent", "log2(1 + extent of the first loop the step names)"),
    ("loop_depth", "its nesting depth"),
    ("loop_innermost", "1 if it holds no loop"),
    ("loop_outermost", "1 if it is at depth 0"),
    ("loop_unit_frac", "share of accesses in its body unit-stride in its iterator"),
    ("loop_invariant_frac", "share of accesses in its body invariant in its iterator"),
    ("loop_strided_frac", "share of accesses in its body with another stride"),
    ("loop_carried_reduction", "1 if a reduction in its body is invariant in its iterator"),
    ("loop_annotated", "1 if it already carries an annotation"),
    ("loop_log2_body_iters", "log2 of the iterations of the loops inside it (0: innermost)"),
    ("loop_tail", "1 if its bound has a min()"),
    ("loop2_log2_extent", "log2(1 + extent of the second loop named)"),
    ("loop2_innermost", "1 if the second loop holds no loop"),
    ("log2_factor", "log2 of the split factor (0 if none)"),
    ("factor_divides", "1 if the factor divides the loop extent"),
    ("log2_factor_ratio", "log2(extent / factor), 0 if none"),
) + tuple((f"space_{s}", f"memory space {s}") for s in SPACES) + (
    ("gpu_block", "binds to gpu.block.*"),
    ("gpu_thread", "binds to gpu.thread.*"),
    ("names_global_array", "1 if the step names an in/out/inout/temp array"),
    ("array_rank", "rank of the array the step names"),
    ("macro", "1 for a macro move (text 'macro: LABEL', agents/macros.py)"),
    ("macro_tile", "1 for a register-tiling macro"),
    ("macro_log2_tile_a", "log2(1 + its unrolled tile extent)"),
    ("macro_log2_tile_b", "log2(1 + its vector tile extent)"),
    ("macro_whole_reduction", "1 if the tile runs the whole reduction"),
    ("macro_b_outer", "1 if the vector tile's outer loop is outermost"),
    ("macro_stage", "1 if it stages a panel of an input"),
)
MACRO_PREFIX = "macro:"
ACTION_NAMES = tuple(name for name, _ in ACTION_FEATURES)
ACTION_DIM = len(ACTION_FEATURES)

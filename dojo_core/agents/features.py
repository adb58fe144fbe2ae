"""Numeric features of program states and of actions: what the learned agents see.

``state_features(program) -> np.ndarray``: float32, length ``FEATURE_DIM``; entry ``i`` is
``STATE_FEATURES[i]`` (name, meaning) below.  ``action_features(program, text)``: float32,
length ``ACTION_DIM``, entries ``ACTION_FEATURES``: the transformation kind one-hot and the
properties of what the step names (its loops, split factor, memory space, GPU axis).

Guarantees: deterministic (a pure function of the IR, no randomness, no timing), fixed
length for every program, finite values (counts and base-2 logarithms ``log2(1 + x)``, so
zero stays zero), and fast: one walk over the IR, cached per program object, so scoring all
the actions of a state costs one analysis.  Extents are evaluated at the kernel's sizes with
every enclosing iterator at its lower bound (a ``min()`` tail loop counts as its full tile);
a bound that cannot be evaluated counts as 1.  Byte counts are naive (every access counted
at every iteration, no cache reuse), good enough to compare states of one kernel.

This module owns the action features; the schema (names, kinds, spaces) is
``feature_schema.py`` and the walk that computes the state features is
``state_analysis.py``; their public names are importable from here too.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ir
from .feature_schema import (ACTION_DIM, ACTION_FEATURES, ACTION_NAMES, FEATURE_DIM,
                             FEATURE_NAMES, KINDS, MACRO_PREFIX, SPACES, STATE_FEATURES)
from .labels import tile_sizes
from .state_analysis import (DTYPE_BYTES, L1_BYTES, L2_BYTES, TRANSCENDENTAL, Analysis,
                             LoopInfo, analyze, log2_1p)

__all__ = ["STATE_FEATURES", "FEATURE_NAMES", "FEATURE_DIM", "ACTION_FEATURES", "ACTION_NAMES",
           "ACTION_DIM", "KINDS", "SPACES", "MACRO_PREFIX", "DTYPE_BYTES", "L1_BYTES",
           "L2_BYTES", "TRANSCENDENTAL", "Analysis", "LoopInfo", "analyze", "state_features",
           "action_features", "action_matrix"]


def state_features(program: ir.Program) -> np.ndarray:
    """The FEATURE_DIM float32 features of a state (a copy: callers may modify it)."""
    return analyze(program).features.copy()


def action_features(program: ir.Program, action_text: str) -> np.ndarray:
    """The ACTION_DIM float32 features of one step text in this state."""
    a = analyze(program)
    v = dict.fromkeys(ACTION_NAMES, 0.0)
    words = action_text.split()
    if words and words[0] == MACRO_PREFIX:
        words = words[1:]
        _macro_features(v, words)
    kind = words[0] if words else ""
    v[f"kind_{kind}" if kind in KINDS else "kind_other"] = 1.0
    named = [a.loops[w] for w in words[1:] if w in a.loops]
    if named:
        info = named[0]
        counts = info.counts
        total = sum(counts.values()) or 1
        v.update(loop_log2_extent=log2_1p(info.extent), loop_depth=info.depth,
                 loop_innermost=float(info.innermost), loop_outermost=float(info.depth == 0),
                 loop_unit_frac=counts["unit"] / total,
                 loop_invariant_frac=counts["invariant"] / total,
                 loop_strided_frac=counts["strided"] / total,
                 loop_carried_reduction=float(info.carried_reduction),
                 loop_annotated=float(bool(info.loop.annotations)),
                 loop_log2_body_iters=math.log2(max(1, info.body_iters)), loop_tail=float(info.tail))
    if len(named) > 1:
        v["loop2_log2_extent"] = log2_1p(named[1].extent)
        v["loop2_innermost"] = float(named[1].innermost)
    if kind == "split" and len(words) >= 4 and words[3].isdigit() and named:
        factor = int(words[3])
        v["log2_factor"] = math.log2(max(1, factor))
        v["factor_divides"] = float(named[0].extent % factor == 0)
        v["log2_factor_ratio"] = math.log2(max(1.0, named[0].extent / max(1, factor)))
    space = next((w for w in words if w in SPACES[1:]), "none")
    v[f"space_{space}"] = 1.0
    v["gpu_block"] = float(any(w.startswith("gpu.block.") for w in words))
    v["gpu_thread"] = float(any(w.startswith("gpu.thread.") for w in words))
    arrays = [a.globals[w] for w in words[1:] if w in a.globals]
    if arrays:
        v["names_global_array"] = 1.0
        v["array_rank"] = len(arrays[0].dims)
    return np.array([v[name] for name in ACTION_NAMES], dtype=np.float32)


def _macro_features(v: dict, words: list) -> None:
    """A macro's label: 'vectorize inner', 'parallelize outer', ... or 'tile A/TA x B/TB x
    R/TR|all [b-outer] [stage X]' (the ``A/TA x`` part absent for a one-dimensional tile)."""
    v["macro"] = 1.0
    sizes = tile_sizes(" ".join(words))
    if not sizes:
        return
    v["macro_tile"] = 1.0
    if len(sizes) == 3:
        v["macro_log2_tile_a"] = log2_1p(int(sizes[0])) if sizes[0].isdigit() else 0.0
    if len(sizes) >= 2:
        v["macro_log2_tile_b"] = log2_1p(int(sizes[-2])) if sizes[-2].isdigit() else 0.0
        v["macro_whole_reduction"] = float(sizes[-1] == "all")
    v["macro_b_outer"] = float("b-outer" in words)
    v["macro_stage"] = float("stage" in words)


def action_matrix(program: ir.Program, texts) -> np.ndarray:
    """action_features of every text, stacked: shape (len(texts), ACTION_DIM)."""
    if not texts:
        return np.zeros((0, ACTION_DIM), dtype=np.float32)
    return np.stack([action_features(program, t) for t in texts])

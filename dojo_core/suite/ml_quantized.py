"""Quantized ML operators (integer dtypes, see ``catalog``).

``int8_matmul``: int8 x int8 -> int32, the core of int8 inference (a quantized linear
layer before its requantization). The IR promotes i8 to i32 before arithmetic (C's integer
promotion), so every product and the int32 accumulation are exact (|C| <= K * 2^14, far
from 2^31 at these sizes). The reference is exact too: every partial sum of the float64
matmul is an integer of magnitude below 2^53 while K * 2^14 < 2^53, so BLAS computes the
int64 result exactly (an int64 ``@`` beyond that); it is a whole-array numpy expression, a
peer.
"""
from __future__ import annotations

import numpy as np

from .entry import SuiteKernel, datasets


def int8_matmul(x, s):
    A, B = x["A"], x["B"]
    if s["K"] * 128 * 128 < 2 ** 53:         # float64 sums of integers: exact
        return {"C": (A @ B).astype(np.int64)}
    return {"C": A.astype(np.int64) @ B.astype(np.int64)}


_INT8 = (-128, 127)

ENTRIES = [
    SuiteKernel(
        "int8_matmul", "Quantized matmul, int8 x int8 -> int32 (exact accumulation)",
        "ml/quantized", int8_matmul,
        lambda s: 2 * s["M"] * s["N"] * s["K"],
        datasets(M=(256, 1024), N=(256, 1024), K=(256, 1024)),
        {"M": 7, "N": 9, "K": 24}, peer=True, dtypes=("i8",),
        input_ranges={"A": _INT8, "B": _INT8}),
]

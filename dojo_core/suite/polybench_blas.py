"""PolyBench/C 4.2 linear-algebra kernels (``linear-algebra/blas`` and
``linear-algebra/kernels``): numpy references and catalog entries (see ``catalog``)."""
from __future__ import annotations

from .catalog import SuiteKernel


def gemm(x, s):
    return {"C": x["alpha"] * x["A"] @ x["B"] + x["beta"] * x["C"]}


def k2mm(x, s):
    return {"D": x["alpha"] * x["A"] @ x["B"] @ x["C"] + x["beta"] * x["D"]}


ENTRIES = [
    SuiteKernel(
        "gemm", "PolyBench gemm: C = alpha A B + beta C", "polybench/blas", gemm,
        lambda s: s["NI"] * s["NJ"] + 3 * s["NI"] * s["NJ"] * s["NK"],
        {"MEDIUM": {"NI": 200, "NJ": 220, "NK": 240},
         "LARGE": {"NI": 1000, "NJ": 1100, "NK": 1200}},
        {"NI": 7, "NJ": 9, "NK": 11}, peer=True),
    SuiteKernel(
        "k2mm", "PolyBench 2mm: D = alpha A B C + beta D", "polybench/kernels", k2mm,
        lambda s: 3 * s["NI"] * s["NJ"] * s["NK"] + s["NI"] * s["NL"] * (2 * s["NJ"] + 1),
        {"MEDIUM": {"NI": 180, "NJ": 190, "NK": 210, "NL": 220},
         "LARGE": {"NI": 800, "NJ": 900, "NK": 1100, "NL": 1200}},
        {"NI": 6, "NJ": 7, "NK": 9, "NL": 10}, peer=True),
]

"""PolyBench/C 4.2 linear-algebra kernels (``linear-algebra/blas`` and
``linear-algebra/kernels``): numpy references and catalog entries (see ``catalog``)."""
from __future__ import annotations

import numpy as np

from .entry import SuiteKernel


def gemm(x, s):
    return {"C": x["alpha"] * x["A"] @ x["B"] + x["beta"] * x["C"]}


def k2mm(x, s):
    return {"D": x["alpha"] * x["A"] @ x["B"] @ x["C"] + x["beta"] * x["D"]}


def k3mm(x, s):
    return {"G": (x["A"] @ x["B"]) @ (x["C"] @ x["D"])}


def atax(x, s):
    return {"y": x["A"].T @ (x["A"] @ x["x"])}


def bicg(x, s):
    return {"s": x["A"].T @ x["r"], "q": x["A"] @ x["p"]}


def doitgen(x, s):
    return {"A": x["A"] @ x["C4"]}


def mvt(x, s):
    return {"x1": x["x1"] + x["A"] @ x["y_1"], "x2": x["x2"] + x["A"].T @ x["y_2"]}


def gemver(x, s):
    A = x["A"] + np.outer(x["u1"], x["v1"]) + np.outer(x["u2"], x["v2"])
    xx = x["x"] + x["beta"] * A.T @ x["y"] + x["z"]
    return {"A": A, "x": xx, "w": x["w"] + x["alpha"] * A @ xx}


def gesummv(x, s):
    return {"y": x["alpha"] * x["A"] @ x["x"] + x["beta"] * x["B"] @ x["x"]}


def symm(x, s):
    # PolyBench reads only A's lower triangle (diagonal included) and mirrors it
    A = np.tril(x["A"]) + np.tril(x["A"], -1).T
    return {"C": x["alpha"] * A @ x["B"] + x["beta"] * x["C"]}


def syr2k(x, s):
    # only the lower triangle (j <= i) of C is updated; the rest keeps its input values
    A, B, C = x["A"], x["B"], x["C"]
    full = x["alpha"] * (A @ B.T + B @ A.T) + x["beta"] * C
    return {"C": np.where(np.tri(C.shape[0], dtype=bool), full, C)}


def syrk(x, s):
    # only the lower triangle (j <= i) of C is updated; the rest keeps its input values
    A, C = x["A"], x["C"]
    full = x["alpha"] * A @ A.T + x["beta"] * C
    return {"C": np.where(np.tri(C.shape[0], dtype=bool), full, C)}


def trmm(x, s):
    # B = alpha * (I + L^T) B with L the strict lower triangle of A (unit diagonal)
    return {"B": x["alpha"] * (x["B"] + np.tril(x["A"], -1).T @ x["B"])}


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
    SuiteKernel(
        "k3mm", "PolyBench 3mm: G = (A B) (C D)", "polybench/kernels", k3mm,
        lambda s: 2 * (s["NI"] * s["NJ"] * s["NK"] + s["NJ"] * s["NL"] * s["NM"]
                       + s["NI"] * s["NL"] * s["NJ"]),
        {"MEDIUM": {"NI": 180, "NJ": 190, "NK": 200, "NL": 210, "NM": 220},
         "LARGE": {"NI": 800, "NJ": 900, "NK": 1000, "NL": 1100, "NM": 1200}},
        {"NI": 6, "NJ": 7, "NK": 8, "NL": 9, "NM": 10}, peer=True),
    SuiteKernel(
        "atax", "PolyBench atax: y = A^T A x", "polybench/kernels", atax,
        lambda s: 4 * s["M"] * s["N"],
        {"MEDIUM": {"M": 390, "N": 410}, "LARGE": {"M": 1900, "N": 2100}},
        {"M": 11, "N": 13}, peer=True),
    SuiteKernel(
        "bicg", "PolyBench bicg: s = A^T r, q = A p", "polybench/kernels", bicg,
        lambda s: 4 * s["M"] * s["N"],
        {"MEDIUM": {"M": 390, "N": 410}, "LARGE": {"M": 1900, "N": 2100}},
        {"M": 11, "N": 13}, peer=True),
    SuiteKernel(
        "doitgen", "PolyBench doitgen: A[r, q, :] = A[r, q, :] C4", "polybench/kernels", doitgen,
        lambda s: 2 * s["NR"] * s["NQ"] * s["NP"] * s["NP"],
        {"MEDIUM": {"NR": 50, "NQ": 40, "NP": 60}, "LARGE": {"NR": 150, "NQ": 140, "NP": 160}},
        {"NR": 6, "NQ": 5, "NP": 7}, peer=True),
    SuiteKernel(
        "mvt", "PolyBench mvt: x1 += A y_1, x2 += A^T y_2", "polybench/kernels", mvt,
        lambda s: 4 * s["N"] * s["N"],
        {"MEDIUM": {"N": 400}, "LARGE": {"N": 2000}},
        {"N": 13}, peer=True),
    SuiteKernel(
        "gemver", "PolyBench gemver: A += u1 v1^T + u2 v2^T, x += beta A^T y + z, w += alpha A x",
        "polybench/blas", gemver,
        lambda s: 10 * s["N"] * s["N"] + s["N"],
        {"MEDIUM": {"N": 400}, "LARGE": {"N": 2000}},
        {"N": 13}, peer=True),
    SuiteKernel(
        "gesummv", "PolyBench gesummv: y = alpha A x + beta B x", "polybench/blas", gesummv,
        lambda s: 4 * s["N"] * s["N"] + 3 * s["N"],
        {"MEDIUM": {"N": 250}, "LARGE": {"N": 1300}},
        {"N": 13}, peer=True),
    SuiteKernel(
        "symm", "PolyBench symm: C = alpha A B + beta C, A symmetric (lower triangle)",
        "polybench/blas", symm,
        lambda s: s["N"] * (5 * s["M"] * (s["M"] - 1) // 2 + 6 * s["M"]),
        {"MEDIUM": {"M": 200, "N": 240}, "LARGE": {"M": 1000, "N": 1200}},
        {"M": 10, "N": 12}, peer=True),
    SuiteKernel(
        "syr2k", "PolyBench syr2k: C = alpha (A B^T + B A^T) + beta C, lower triangle",
        "polybench/blas", syr2k,
        lambda s: s["N"] * (s["N"] + 1) // 2 * (1 + 6 * s["M"]),
        {"MEDIUM": {"M": 200, "N": 240}, "LARGE": {"M": 1000, "N": 1200}},
        {"M": 10, "N": 12}, peer=True),
    SuiteKernel(
        "syrk", "PolyBench syrk: C = alpha A A^T + beta C, lower triangle", "polybench/blas",
        syrk,
        lambda s: s["N"] * (s["N"] + 1) // 2 * (1 + 3 * s["M"]),
        {"MEDIUM": {"M": 200, "N": 240}, "LARGE": {"M": 1000, "N": 1200}},
        {"M": 10, "N": 12}, peer=True),
    SuiteKernel(
        "trmm", "PolyBench trmm: B = alpha A^T B, A unit lower triangular", "polybench/blas",
        trmm,
        lambda s: s["N"] * s["M"] * s["M"],
        {"MEDIUM": {"M": 200, "N": 240}, "LARGE": {"M": 1000, "N": 1200}},
        {"M": 10, "N": 12}, peer=True),
]

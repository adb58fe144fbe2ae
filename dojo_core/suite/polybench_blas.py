"""PolyBench/C 4.2 linear-algebra kernels (``linear-algebra/blas`` and
``linear-algebra/kernels``): numpy references and catalog entries (see ``catalog``)."""
from __future__ import annotations

import numpy as np

from .entry import datasets, polybench


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
    polybench(gemm, "polybench/blas", "C = alpha A B + beta C",
              lambda s: s["NI"] * s["NJ"] + 3 * s["NI"] * s["NJ"] * s["NK"],
              datasets(NI=(200, 1000), NJ=(220, 1100), NK=(240, 1200)),
              {"NI": 7, "NJ": 9, "NK": 11}, peer=True),
    polybench(k2mm, "polybench/kernels", "D = alpha A B C + beta D",
              lambda s: 3 * s["NI"] * s["NJ"] * s["NK"] + s["NI"] * s["NL"] * (2 * s["NJ"] + 1),
              datasets(NI=(180, 800), NJ=(190, 900), NK=(210, 1100), NL=(220, 1200)),
              {"NI": 6, "NJ": 7, "NK": 9, "NL": 10}, peer=True),
    polybench(k3mm, "polybench/kernels", "G = (A B) (C D)",
              lambda s: 2 * (s["NI"] * s["NJ"] * s["NK"] + s["NJ"] * s["NL"] * s["NM"]
                             + s["NI"] * s["NL"] * s["NJ"]),
              datasets(NI=(180, 800), NJ=(190, 900), NK=(200, 1000), NL=(210, 1100),
                       NM=(220, 1200)),
              {"NI": 6, "NJ": 7, "NK": 8, "NL": 9, "NM": 10}, peer=True),
    polybench(atax, "polybench/kernels", "y = A^T A x", lambda s: 4 * s["M"] * s["N"],
              datasets(M=(390, 1900), N=(410, 2100)), {"M": 11, "N": 13}, peer=True),
    polybench(bicg, "polybench/kernels", "s = A^T r, q = A p", lambda s: 4 * s["M"] * s["N"],
              datasets(M=(390, 1900), N=(410, 2100)), {"M": 11, "N": 13}, peer=True),
    polybench(doitgen, "polybench/kernels", "A[r, q, :] = A[r, q, :] C4",
              lambda s: 2 * s["NR"] * s["NQ"] * s["NP"] * s["NP"],
              datasets(NR=(50, 150), NQ=(40, 140), NP=(60, 160)), {"NR": 6, "NQ": 5, "NP": 7},
              peer=True),
    polybench(mvt, "polybench/kernels", "x1 += A y_1, x2 += A^T y_2",
              lambda s: 4 * s["N"] * s["N"], datasets(N=(400, 2000)), {"N": 13}, peer=True),
    polybench(gemver, "polybench/blas",
              "A += u1 v1^T + u2 v2^T, x += beta A^T y + z, w += alpha A x",
              lambda s: 10 * s["N"] * s["N"] + s["N"], datasets(N=(400, 2000)), {"N": 13},
              peer=True),
    polybench(gesummv, "polybench/blas", "y = alpha A x + beta B x",
              lambda s: 4 * s["N"] * s["N"] + 3 * s["N"], datasets(N=(250, 1300)), {"N": 13},
              peer=True),
    polybench(symm, "polybench/blas", "C = alpha A B + beta C, A symmetric (lower triangle)",
              lambda s: s["N"] * (5 * s["M"] * (s["M"] - 1) // 2 + 6 * s["M"]),
              datasets(M=(200, 1000), N=(240, 1200)), {"M": 10, "N": 12}, peer=True),
    polybench(syr2k, "polybench/blas", "C = alpha (A B^T + B A^T) + beta C, lower triangle",
              lambda s: s["N"] * (s["N"] + 1) // 2 * (1 + 6 * s["M"]),
              datasets(M=(200, 1000), N=(240, 1200)), {"M": 10, "N": 12}, peer=True),
    polybench(syrk, "polybench/blas", "C = alpha A A^T + beta C, lower triangle",
              lambda s: s["N"] * (s["N"] + 1) // 2 * (1 + 3 * s["M"]),
              datasets(M=(200, 1000), N=(240, 1200)), {"M": 10, "N": 12}, peer=True),
    polybench(trmm, "polybench/blas", "B = alpha A^T B, A unit lower triangular",
              lambda s: s["N"] * s["M"] * s["M"], datasets(M=(200, 1000), N=(240, 1200)),
              {"M": 10, "N": 12}, peer=True),
]

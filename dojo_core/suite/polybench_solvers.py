"""PolyBench/C 4.2 solvers (``linear-algebra/solvers``), data mining (``datamining``) and
medley (``medley``) kernels: numpy references, structured inputs and catalog entries
(see ``catalog``).

Arrays PolyBench prints are ``out``/``inout``; arrays its kernel only writes and does not
print (correlation's mean and stddev, ludcmp's y, deriche's y1 and y2, durbin's z) are
``temp``, as 2mm's tmp. The inputs are drawn so that the f32 twin stays within the f32
tolerance of the float64 reference: diagonally dominant matrices for the factorisations,
an autocorrelation sequence for durbin (PolyBench's r = N + 1 - i gives an ill-conditioned
Toeplitz system: 1.6e-5 relative error in f32 at N = 20, 40% at N = 400), float_n = N as
PolyBench sets it.
"""
from __future__ import annotations

import numpy as np

from .entry import datasets, polybench


def _sums(n):
    """sum_{i<n} i, sum_{i<n} i^2."""
    return n * (n - 1) // 2, (n - 1) * n * (2 * n - 1) // 6


# ---------------------------------------------------------------- linear-algebra/solvers

def cholesky(x, s):
    a = x["A"]
    lower = np.linalg.cholesky(a)          # reads the lower triangle only, as the C does
    return {"A": np.tril(lower) + np.triu(a, 1)}


def cholesky_inputs(rng, s):
    n = s["N"]
    b = rng.uniform(-1.0, 1.0, (n, n))
    return {"A": (b + b.T) / 2 + n * np.eye(n)}      # symmetric, diagonally dominant: SPD


def cholesky_flops(s):
    n = s["N"]
    return n * (n + 1) * (2 * n + 1) // 6            # sum_i (i + 1)^2: 2 per k, div, sqrt


def durbin(x, s):
    r = x["r"]
    n = r.shape[0]
    first = np.concatenate(([1.0], r[:-1]))
    toeplitz = first[np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])]
    return {"y": np.linalg.solve(toeplitz, -r)}


def durbin_inputs(rng, s):
    # r[k - 1] = c_k / (2 c_0) for the autocorrelation c of a random sequence: the Toeplitz
    # matrix (C + c_0 I) / (2 c_0) is positive definite with condition number below ~10
    n = s["N"]
    h = rng.uniform(-1.0, 1.0, n + 1)
    c = np.correlate(h, h, "full")[n:]
    return {"r": c[1:] / (2.0 * c[0])}


def durbin_flops(s):
    n = s["N"]
    return 2 * n * (n - 1) + 5 * (n - 1)


def gramschmidt(x, s):
    a, r_in = x["A"], x["R"]
    m, n = a.shape
    if m >= n:
        q, r = np.linalg.qr(a)
        sign = np.where(np.diag(r) < 0, -1.0, 1.0)   # R[k, k] = sqrt(...) >= 0
        q, r = q * sign, r * sign[:, None]
    else:   # rank deficient: columns past M are roundoff; follow the recurrence
        a = a.copy()
        q, r = np.zeros((m, n)), np.zeros((n, n))
        for k in range(n):
            r[k, k] = np.sqrt(a[:, k] @ a[:, k])
            q[:, k] = a[:, k] / r[k, k]
            r[k, k + 1:] = q[:, k] @ a[:, k + 1:]
            a[:, k + 1:] -= np.outer(q[:, k], r[k, k + 1:])
    return {"A": q * np.diag(r), "R": np.triu(r) + np.tril(r_in, -1), "Q": q}


def gramschmidt_inputs(rng, s):
    m, n = s["M"], s["N"]
    a = rng.uniform(-1.0, 1.0, (m, n))
    k = min(m, n)
    a[:k, :k] += 2.0 * np.eye(k)            # full rank, well conditioned
    return {"A": a}


def gramschmidt_flops(s):
    m, n = s["M"], s["N"]
    return n * (3 * m + 1) + 2 * m * n * (n - 1)


def _lu_in_place(a):
    """Gaussian elimination without pivoting (right-looking; the C is left-looking)."""
    a = a.copy()
    n = a.shape[0]
    for k in range(n):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def lu(x, s):
    return {"A": _lu_in_place(x["A"])}


def dominant_inputs(rng, s):
    n = s["N"]
    return {"A": rng.uniform(-1.0, 1.0, (n, n)) + n * np.eye(n)}


def lu_flops(s):
    n = s["N"]
    sum_i, sum_i2 = _sums(n)
    return 2 * n * sum_i - sum_i2                   # sum_i i^2 + 2 i (N - i)


def ludcmp(x, s):
    a = _lu_in_place(x["A"])
    n = a.shape[0]
    y = np.linalg.solve(np.tril(a, -1) + np.eye(n), x["b"])
    return {"A": a, "x": np.linalg.solve(np.triu(a), y)}


def ludcmp_flops(s):
    n = s["N"]
    return lu_flops(s) + 2 * n * (n - 1) + n


def trisolv(x, s):
    return {"x": np.linalg.solve(np.tril(x["L"]), x["b"])}


def trisolv_inputs(rng, s):
    n = s["N"]
    low = rng.uniform(-1.0, 1.0, (n, n)) / n
    low[np.diag_indices(n)] = rng.uniform(1.0, 2.0, n)   # dominant, non-zero diagonal
    return {"L": low}


# ---------------------------------------------------------------- datamining

def correlation(x, s):
    data, float_n = x["data"], x["float_n"]
    mean = data.sum(axis=0) / float_n
    stddev = np.sqrt(((data - mean) ** 2).sum(axis=0) / float_n)
    stddev = np.where(stddev <= 0.1, 1.0, stddev)
    data = (data - mean) / (np.sqrt(float_n) * stddev)
    corr = data.T @ data
    np.fill_diagonal(corr, 1.0)
    return {"data": data, "corr": corr}


def correlation_inputs(rng, s):
    n, m = s["N"], s["M"]
    data = rng.uniform(-1.0, 1.0, (n, m)) + rng.uniform(-2.0, 2.0, m)
    data[:, 0] = rng.uniform(-0.01, 0.01, n)      # non-constant, std dev below eps = 0.1
    return {"float_n": float(n), "data": data}


def correlation_flops(s):
    m, n = s["M"], s["N"]
    # mean; std dev (sub, sub, mul, add per element; div, sqrt, compare per column);
    # centre and reduce (sub, div per element; sqrt, mul per column); upper triangle
    return (n * m + m) + (4 * n * m + 3 * m) + (2 * n * m + 2 * m) + m * (m - 1) * n


def covariance(x, s):
    data, float_n = x["data"], x["float_n"]
    data = data - data.sum(axis=0) / float_n
    return {"data": data, "cov": data.T @ data / (float_n - 1.0)}


def covariance_inputs(rng, s):
    n, m = s["N"], s["M"]
    return {"float_n": float(n), "data": rng.uniform(-1.0, 1.0, (n, m))}


def covariance_flops(s):
    m, n = s["M"], s["N"]
    return 2 * m * n + m + m * (m + 1) * (n + 1)


# ---------------------------------------------------------------- medley

def deriche(x, s):
    alpha, img = float(x["alpha"]), x["imgIn"]
    w, h = img.shape
    e = np.exp(-alpha)
    k = (1.0 - e) * (1.0 - e) / (1.0 + 2.0 * alpha * e - np.exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * e * (alpha - 1.0)
    a3 = a7 = k * e * (alpha + 1.0)
    a4 = a8 = -k * np.exp(-2.0 * alpha)
    b1, b2 = 2.0 ** -alpha, -np.exp(-2.0 * alpha)

    def causal(u, a_cur, a_prev):       # along axis 1, all rows at once
        y = np.zeros_like(u)
        for j in range(u.shape[1]):
            y[:, j] = a_cur * u[:, j]
            if j >= 1:
                y[:, j] += a_prev * u[:, j - 1] + b1 * y[:, j - 1]
            if j >= 2:
                y[:, j] += b2 * y[:, j - 2]
        return y

    def anticausal(u, a_next, a_next2):  # along axis 1, backwards
        n = u.shape[1]
        y = np.zeros_like(u)
        for j in range(n - 1, -1, -1):
            if j + 1 < n:
                y[:, j] += a_next * u[:, j + 1] + b1 * y[:, j + 1]
            if j + 2 < n:
                y[:, j] += a_next2 * u[:, j + 2] + b2 * y[:, j + 2]
        return y

    out = causal(img, a1, a2) + anticausal(img, a3, a4)            # c1 = 1
    out = (causal(out.T, a5, a6) + anticausal(out.T, a7, a8)).T    # c2 = 1
    assert out.shape == (w, h)
    return {"imgOut": out}


def deriche_flops(s):
    # 4 passes of 4 mul + 3 add per pixel, twice (y1 + y2) * c per pixel; the coefficients
    # take 26 more (exp and pow not counted)
    return 32 * s["W"] * s["H"] + 26


def floyd_warshall(x, s):
    path = x["path"].copy()
    for k in range(path.shape[0]):   # in place equals out of place: path[k, k] >= 0
        path = np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :])
    return {"path": path}


def floyd_warshall_inputs(rng, s):
    n = s["N"]
    path = rng.integers(1, 20, (n, n)).astype(np.float64)
    path[rng.random((n, n)) < 0.3] = 999          # no edge, as PolyBench
    return {"path": path}


def nussinov(x, s):
    # by anti-diagonals d = j - i (the C runs rows from the bottom up): every cell of
    # diagonal d depends on cells of smaller diagonals only, so a diagonal is one step
    seq, table = x["seq"], x["table"].copy()
    n = seq.shape[0]
    for d in range(1, n):
        i = np.arange(n - d)
        j = i + d
        pair = np.where((d > 1) & (seq[i] + seq[j] == 3), 1.0, 0.0)
        best = np.maximum.reduce([table[i, j], table[i, j - 1], table[i + 1, j],
                                  table[i + 1, j - 1] + pair])
        if d > 1:
            k = i[:, None] + np.arange(1, d)[None, :]           # i < k < j
            best = np.maximum(best, (table[i[:, None], k] + table[k + 1, j[:, None]]).max(axis=1))
        table[i, j] = best
    return {"table": table}


def nussinov_inputs(rng, s):
    n = s["N"]
    return {"seq": rng.integers(0, 4, n).astype(np.float64),
            "table": rng.integers(0, 3, (n, n)).astype(np.float64)}


def nussinov_flops(s):
    # per (i, j), d = j - i: 3 max and 1 add, then d - 1 (add, max)
    n = s["N"]
    return sum((n - d) * (2 * d + 2) for d in range(1, n))


ENTRIES = [
    polybench(cholesky, "polybench/solvers", "in-place Cholesky factorisation A = L L^T",
              cholesky_flops, datasets(N=(400, 2000)), {"N": 20}, peer=True,
              make_inputs=cholesky_inputs),
    polybench(durbin, "polybench/solvers", "Levinson-Durbin solution of a Toeplitz system",
              durbin_flops, datasets(N=(400, 2000)), {"N": 18}, peer=True,
              make_inputs=durbin_inputs),
    polybench(gramschmidt, "polybench/solvers", "QR decomposition by modified Gram-Schmidt",
              gramschmidt_flops, datasets(M=(240, 1200), N=(200, 1000)), {"M": 20, "N": 14},
              make_inputs=gramschmidt_inputs),
    polybench(lu, "polybench/solvers", "in-place LU decomposition without pivoting", lu_flops,
              datasets(N=(400, 2000)), {"N": 20}, make_inputs=dominant_inputs),
    polybench(ludcmp, "polybench/solvers", "LU decomposition and the solution of A x = b",
              ludcmp_flops, datasets(N=(400, 2000)), {"N": 18}, make_inputs=dominant_inputs),
    polybench(trisolv, "polybench/solvers", "forward substitution L x = b",
              lambda s: s["N"] * s["N"], datasets(N=(400, 2000)), {"N": 22}, peer=True,
              make_inputs=trisolv_inputs),
    polybench(correlation, "polybench/datamining", "correlation matrix of the columns of data",
              correlation_flops, datasets(M=(240, 1200), N=(260, 1400)), {"M": 12, "N": 20},
              peer=True, make_inputs=correlation_inputs),
    polybench(covariance, "polybench/datamining", "covariance matrix of the columns of data",
              covariance_flops, datasets(M=(240, 1200), N=(260, 1400)), {"M": 12, "N": 20},
              peer=True, make_inputs=covariance_inputs),
    polybench(deriche, "polybench/medley", "Deriche recursive edge-detection filter",
              deriche_flops, datasets(W=(720, 4096), H=(480, 2160)), {"W": 20, "H": 14},
              input_ranges={"alpha": (0.2, 0.3), "imgIn": (0.0, 1.0)}),
    polybench(floyd_warshall, "polybench/medley", "all-pairs shortest paths",
              lambda s: 2 * s["N"] ** 3, datasets(N=(500, 2800)), {"N": 16}, dtypes=("i32",),
              make_inputs=floyd_warshall_inputs),
    polybench(nussinov, "polybench/medley", "RNA folding by dynamic programming", nussinov_flops,
              datasets(N=(500, 2500)), {"N": 20}, dtypes=("i32",), make_inputs=nussinov_inputs),
]

"""PolyBench/C 4.2 stencils (see ``catalog``).

The references step through time in Python (the time loop is sequential) and update whole
arrays with numpy slicing within a step, except seidel_2d (in-place Gauss-Seidel: each point
reads its already updated left and upper neighbours, so it walks rows and columns) and adi,
which solves each sweep's tridiagonal systems (one per column, then one per row) as dense
systems with ``np.linalg.solve`` instead of PolyBench's Thomas recurrence: an independent
check of the translation, but O(N^3) per sweep, so neither is a numpy peer.
"""
from __future__ import annotations

import numpy as np

from .entry import datasets, polybench


def jacobi_1d(x, s):
    A, B = x["A"].copy(), x["B"].copy()
    for _ in range(s["TSTEPS"]):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return {"A": A, "B": B}


def _five_point(X):
    return 0.2 * (X[1:-1, 1:-1] + X[1:-1, :-2] + X[1:-1, 2:] + X[2:, 1:-1] + X[:-2, 1:-1])


def jacobi_2d(x, s):
    A, B = x["A"].copy(), x["B"].copy()
    for _ in range(s["TSTEPS"]):
        B[1:-1, 1:-1] = _five_point(A)
        A[1:-1, 1:-1] = _five_point(B)
    return {"A": A, "B": B}


def _heat(X):
    c = X[1:-1, 1:-1, 1:-1]
    return (0.125 * (X[2:, 1:-1, 1:-1] - 2.0 * c + X[:-2, 1:-1, 1:-1])
            + 0.125 * (X[1:-1, 2:, 1:-1] - 2.0 * c + X[1:-1, :-2, 1:-1])
            + 0.125 * (X[1:-1, 1:-1, 2:] - 2.0 * c + X[1:-1, 1:-1, :-2]) + c)


def heat_3d(x, s):
    A, B = x["A"].copy(), x["B"].copy()
    for _ in range(s["TSTEPS"]):
        B[1:-1, 1:-1, 1:-1] = _heat(A)
        A[1:-1, 1:-1, 1:-1] = _heat(B)
    return {"A": A, "B": B}


def fdtd_2d(x, s):
    ex, ey, hz, fict = x["ex"].copy(), x["ey"].copy(), x["hz"].copy(), x["_fict_"]
    for t in range(s["TMAX"]):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return {"ex": ex, "ey": ey, "hz": hz}


def seidel_2d(x, s):
    A = x["A"].copy()
    n = s["N"]
    for _ in range(s["TSTEPS"]):
        for i in range(1, n - 1):
            # everything but the left neighbour, which the sweep along the row updates
            rest = (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 1:-1] + A[i, 2:]
                    + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, n - 1):
                A[i, j] = (rest[j - 1] + A[i, j - 1]) / 9.0
    return {"A": A}


def _tridiagonal(m, lower, diag, upper):
    return (np.diag(np.full(m, diag)) + np.diag(np.full(m - 1, lower), -1)
            + np.diag(np.full(m - 1, upper), 1))


def adi(x, s):
    """Each half step solves lower * w[j-1] + diag * w[j] + upper * w[j+1] = rhs[j] for the
    interior j, with w = 1 at both ends, for every interior column (then row) at once."""
    n, steps = s["N"], s["TSTEPS"]
    u = x["u"].copy()
    mul1 = 2.0 * (1.0 / steps) / (1.0 / n) ** 2
    mul2 = 1.0 * (1.0 / steps) / (1.0 / n) ** 2
    a, b, c = -mul1 / 2.0, 1.0 + mul1, -mul1 / 2.0
    d, e, f = -mul2 / 2.0, 1.0 + mul2, -mul2 / 2.0
    m1 = _tridiagonal(n - 2, a, b, c)
    m2 = _tridiagonal(n - 2, d, e, f)
    v = np.ones((n, n))
    for _ in range(steps):
        # column sweep: v[1:-1, i] from u's rows j, neighbouring columns i -+ 1
        rhs = -d * u[1:-1, :-2] + (1.0 + 2.0 * d) * u[1:-1, 1:-1] - f * u[1:-1, 2:]
        rhs[0] -= a
        rhs[-1] -= c
        v[1:-1, 1:-1] = np.linalg.solve(m1, rhs)
        v[0, 1:-1] = v[-1, 1:-1] = 1.0
        # row sweep: u[i, 1:-1] from v's neighbouring rows i -+ 1
        rhs = -a * v[:-2, 1:-1] + (1.0 + 2.0 * a) * v[1:-1, 1:-1] - c * v[2:, 1:-1]
        rhs[:, 0] -= d
        rhs[:, -1] -= f
        u[1:-1, 1:-1] = np.linalg.solve(m2, rhs.T).T
        u[1:-1, 0] = u[1:-1, -1] = 1.0
    return {"u": u}


def _fdtd_flops(s):
    nx, ny = s["NX"], s["NY"]
    return s["TMAX"] * (3 * (nx - 1) * ny + 3 * nx * (ny - 1) + 5 * (nx - 1) * (ny - 1))


def _sweeps(per_point: int, dims: int):
    """flops(s) of TSTEPS time steps over the interior of an N^dims grid, ``per_point``
    operations per interior point and step."""
    return lambda s: per_point * s["TSTEPS"] * (s["N"] - 2) ** dims


def _stencil(reference, summary, per_point, dims, n, test_sizes, peer=True):
    """The entry of a stencil of TSTEPS steps (100 in MEDIUM, 500 in LARGE) on an N^dims
    grid, N being ``n`` = (MEDIUM's, LARGE's)."""
    return polybench(reference, "polybench/stencils", summary, _sweeps(per_point, dims),
                     datasets(TSTEPS=(100, 500), N=n), test_sizes, peer=peer)


ENTRIES = [
    _stencil(adi, "alternating-direction implicit solver", 26, 2, (200, 1000),
             {"TSTEPS": 3, "N": 12}, peer=False),
    polybench(fdtd_2d, "polybench/stencils", "2D finite-difference time-domain", _fdtd_flops,
              datasets(TMAX=(100, 500), NX=(200, 1000), NY=(240, 1200)),
              {"TMAX": 3, "NX": 10, "NY": 13}, peer=True),
    _stencil(heat_3d, "3D heat equation, 7-point stencil", 30, 3, (40, 120),
             {"TSTEPS": 3, "N": 9}),
    _stencil(jacobi_1d, "1D 3-point Jacobi stencil", 6, 1, (400, 2000), {"TSTEPS": 4, "N": 23}),
    _stencil(jacobi_2d, "2D 5-point Jacobi stencil", 10, 2, (250, 1300), {"TSTEPS": 3, "N": 14}),
    _stencil(seidel_2d, "2D 9-point Gauss-Seidel stencil", 9, 2, (400, 2000),
             {"TSTEPS": 3, "N": 14}, peer=False),
]

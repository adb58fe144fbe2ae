"""The numpy references of the kernel library, checked against independent formulations
(explicit loops, mathematical identities), with no dependency on the parser or interpreter."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dojo_core.kernels import references as ref
from dojo_core.kernels.catalog import CATALOG

RNG = np.random.default_rng(1234)


def u(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_matmul_family_against_loops():
    A, B = u(4, 3), u(3, 5)
    C = np.zeros((4, 5))
    for i in range(4):
        for j in range(5):
            C[i, j] = sum(A[i, k] * B[k, j] for k in range(3))
    close(ref.matmul({"A": A, "B": B}, {})["C"], C)
    close(ref.matmul_nt({"A": A, "B": B.T.copy()}, {})["C"], C)
    X, Y = u(2, 4, 3), u(2, 3, 5)
    Z = ref.bmm({"X": X, "Y": Y}, {})["Z"]
    for b in range(2):
        close(Z[b], X[b] @ Y[b])
    bias = u(5)
    Yl = ref.linear_relu({"X": A, "W": B, "bias": bias}, {})["Y"]
    close(Yl, np.where(C + bias > 0, C + bias, 0.0))
    x = u(3)
    close(ref.gemv({"A": A, "x": x}, {})["y"], [sum(A[i, k] * x[k] for k in range(3)) for i in range(4)])


def test_axpy_and_reductions():
    x, y = u(7), u(7)
    close(ref.axpy({"alpha": np.array(0.5), "x": x, "y": y}, {})["y"], 0.5 * x + y)
    X = u(3, 6)
    close(ref.row_sum({"X": X}, {})["y"], [sum(row) for row in X])
    s = ref.sum_squares({"x": x}, {})["s"]
    assert s.shape == ()
    close(s, sum(v * v for v in x))
    close(ref.transpose({"A": X}, {})["B"], [[X[i, j] for i in range(3)] for j in range(6)])


def test_softmax_and_log_softmax():
    X = u(5, 9, low=-30, high=30)
    Y = ref.softmax({"X": X}, {})["Y"]
    close(Y.sum(axis=1), np.ones(5))
    assert (Y > 0).all()
    close(Y[0], [math.exp(v) / sum(math.exp(w) for w in X[0]) for v in X[0]])
    # shift invariance, and no overflow on large values
    close(ref.softmax({"X": X + 500.0}, {})["Y"], Y)
    L = ref.log_softmax({"X": X}, {})["Y"]
    close(np.exp(L), Y)


def test_layernorm_rmsnorm_batchnorm():
    X = u(4, 16, low=-3, high=5)
    ones, zeros = np.ones(16), np.zeros(16)
    Y = ref.layernorm({"X": X, "gamma": ones, "beta": zeros, "eps": np.array(0.0)}, {})["Y"]
    close(Y.mean(axis=1), np.zeros(4))
    close((Y * Y).mean(axis=1), np.ones(4))
    gamma, beta, eps = u(16), u(16), 1e-3
    Y2 = ref.layernorm({"X": X, "gamma": gamma, "beta": beta, "eps": np.array(eps)}, {})["Y"]
    for i in range(4):
        mu = sum(X[i]) / 16
        var = sum((v - mu) ** 2 for v in X[i]) / 16
        close(Y2[i], [(X[i, j] - mu) / math.sqrt(var + eps) * gamma[j] + beta[j] for j in range(16)])
    R = ref.rmsnorm({"X": X, "gamma": gamma, "eps": np.array(eps)}, {})["Y"]
    for i in range(4):
        rms = math.sqrt(sum(v * v for v in X[i]) / 16 + eps)
        close(R[i], X[i] / rms * gamma)
    Xb = u(2, 3, 4, 5)
    mean, var, g, b = u(3), u(3, low=0.5, high=2), u(3), u(3)
    Yb = ref.batchnorm({"X": Xb, "mean": mean, "var": var, "gamma": g, "beta": b,
                        "eps": np.array(eps)}, {})["Y"]
    for c in range(3):
        close(Yb[:, c], (Xb[:, c] - mean[c]) / math.sqrt(var[c] + eps) * g[c] + b[c])


def test_activations():
    X = np.linspace(-5, 5, 41).reshape(1, 41)
    G = ref.gelu({"X": X}, {})["Y"]
    close(G, [[0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in X[0]]])
    # the tanh approximation agrees to about 1e-3
    approx = 0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X ** 3)))
    assert np.max(np.abs(G - approx)) < 2e-3
    close(ref.relu({"X": X}, {})["Y"], np.where(X > 0, X, 0.0))
    close(ref.silu({"X": X}, {})["Y"], X * (1 / (1 + np.exp(-X))))
    A, B = u(3, 4), u(3, 4)
    close(ref.add({"A": A, "B": B}, {})["C"], A + B)


def naive_conv(X, Wt, depthwise):
    n_, c_, hp, wp = X.shape
    h_, w_ = hp - 2, wp - 2
    f_ = Wt.shape[0]
    Y = np.zeros((n_, c_ if depthwise else f_, h_, w_))
    for n in range(n_):
        for f in range(Y.shape[1]):
            for h in range(h_):
                for w in range(w_):
                    acc = 0.0
                    for c in ([f] if depthwise else range(c_)):
                        for kh in range(3):
                            for kw in range(3):
                                wt = Wt[c, kh, kw] if depthwise else Wt[f, c, kh, kw]
                                acc += X[n, c, h + kh, w + kw] * wt
                    Y[n, f, h, w] = acc
    return Y


def test_convolutions_against_loops():
    X, Wt = u(2, 3, 6, 7), u(4, 3, 3, 3)
    close(ref.conv2d({"X": X, "Wt": Wt}, {})["Y"], naive_conv(X, Wt, False))
    Wd = u(3, 3, 3)
    close(ref.depthwise_conv2d({"X": X, "Wt": Wd}, {})["Y"], naive_conv(X, Wd, True))


def test_pooling_against_loops():
    s = {"N": 2, "C": 3, "H": 4, "W": 5}
    X = u(2, 3, 8, 10)
    M = ref.maxpool2d({"X": X}, s)["Y"]
    A = ref.avgpool2d({"X": X}, s)["Y"]
    for n, c, h, w in np.ndindex(2, 3, 4, 5):
        window = [X[n, c, 2 * h + a, 2 * w + b] for a in range(2) for b in range(2)]
        assert M[n, c, h, w] == max(window)
        assert abs(A[n, c, h, w] - sum(window) / 4) < 1e-12


def test_attention_against_loops():
    S, D = 6, 4
    Q, K, V = u(S, D), u(S, D), u(S, D)
    scale = 1 / math.sqrt(D)
    O = ref.attention({"Q": Q, "K": K, "V": V, "scale": np.array(scale)}, {"S": S, "D": D})["O"]
    for i in range(S):
        scores = [scale * sum(Q[i, d] * K[j, d] for d in range(D)) for j in range(S)]
        m = max(scores)
        p = [math.exp(v - m) for v in scores]
        total = sum(p)
        close(O[i], [sum(p[j] * V[j, e] for j in range(S)) / total for e in range(D)])


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_references_do_not_modify_inputs(name):
    """Every reference leaves its inputs untouched (inout kernels return a new array)."""
    entry = CATALOG[name]
    shapes = {
        "matmul": {"A": (3, 2), "B": (2, 4)}, "matmul_nt": {"A": (3, 2), "B": (4, 2)},
        "bmm": {"X": (2, 3, 2), "Y": (2, 2, 4)},
        "linear_relu": {"X": (3, 2), "W": (2, 4), "bias": (4,)},
        "gemv": {"A": (3, 2), "x": (2,)}, "axpy": {"alpha": (), "x": (5,), "y": (5,)},
        "layernorm": {"X": (3, 4), "gamma": (4,), "beta": (4,), "eps": ()},
        "rmsnorm": {"X": (3, 4), "gamma": (4,), "eps": ()},
        "batchnorm": {"X": (1, 2, 3, 3), "mean": (2,), "var": (2,), "gamma": (2,),
                      "beta": (2,), "eps": ()},
        "add": {"A": (3, 4), "B": (3, 4)}, "transpose": {"A": (3, 4)},
        "sum_squares": {"x": (5,)},
        "conv2d": {"X": (1, 2, 4, 5), "Wt": (3, 2, 3, 3)},
        "depthwise_conv2d": {"X": (1, 2, 4, 5), "Wt": (2, 3, 3)},
        "maxpool2d": {"X": (1, 2, 4, 6)}, "avgpool2d": {"X": (1, 2, 4, 6)},
        "attention": {"Q": (4, 3), "K": (4, 3), "V": (4, 3), "scale": ()},
    }.get(name, {"X": (3, 4)})
    sizes = {"N": 1, "C": 2, "H": 2, "W": 3}
    x = {k: u(*shape, low=0.5, high=1.5) for k, shape in shapes.items()}
    before = {k: v.copy() for k, v in x.items()}
    out = entry.reference(x, sizes)
    assert out and all(np.isfinite(v).all() for v in out.values())
    for k in x:
        np.testing.assert_array_equal(x[k], before[k])

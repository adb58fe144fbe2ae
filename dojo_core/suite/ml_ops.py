"""ML operators the kernel library does not have (see ``catalog``).

Convolutions take inputs already padded (as the library's conv2d does); every reference is
a whole-array numpy expression (convolutions: windows from ``sliding_window_view``
contracted with ``einsum`` or, per group, a matmul), so each is a peer.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .entry import SuiteKernel, datasets


def grouped_conv2d(x, s):
    n, g, cg, fg, h, w = (s[k] for k in ("N", "G", "CG", "FG", "H", "W"))
    X = x["X"].reshape(n, g, cg, h + 2, w + 2)
    windows = sliding_window_view(X, (3, 3), axis=(3, 4))          # n g c h w kh kw
    cols = windows.transpose(0, 1, 2, 5, 6, 3, 4).reshape(n, g, cg * 9, h * w)
    Y = x["Wt"].reshape(g, fg, cg * 9) @ cols                      # n g f (h w)
    return {"Y": Y.reshape(n, g * fg, h, w)}


def dilated_conv2d(x, s):
    windows = sliding_window_view(x["X"], (5, 5), axis=(2, 3))[..., ::2, ::2]
    return {"Y": np.einsum("nchwij,fcij->nfhw", windows, x["Wt"], optimize=True)}


def conv1d(x, s):
    windows = sliding_window_view(x["X"], s["K"], axis=2)           # n c l k
    return {"Y": np.einsum("nclk,fck->nfl", windows, x["Wt"], optimize=True)}


def linear_bias_gelu(x, s):
    h = x["X"] @ x["Wt"] + x["bias"]
    return {"Y": 0.5 * h * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (h + 0.044715 * h ** 3)))}


def causal_scores(x, s):
    scores = x["Q"] @ x["K"].T * x["scale"]
    S = s["S"]
    scores = np.where(np.tril(np.ones((S, S), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return {"P": e / e.sum(axis=1, keepdims=True)}


def batched_transpose(x, s):
    return {"Y": np.ascontiguousarray(np.swapaxes(x["X"], 1, 2))}


def batched_matmul(x, s):
    return {"C": np.matmul(x["A"], x["B"])}


def col_mean(x, s):
    return {"Y": x["X"].mean(axis=0)}


def softmax_cols(x, s):
    e = np.exp(x["X"] - x["X"].max(axis=0, keepdims=True))
    return {"Y": e / e.sum(axis=0, keepdims=True)}


def group_norm(x, s):
    X = x["X"]
    n, c = X.shape[:2]
    groups = X.reshape(n, s["G"], -1)
    mu = groups.mean(axis=2, keepdims=True)
    var = groups.var(axis=2, keepdims=True)
    normed = ((groups - mu) / np.sqrt(var + x["eps"])).reshape(X.shape)
    return {"Y": normed * x["gamma"][None, :, None, None] + x["beta"][None, :, None, None]}


def swiglu(x, s):
    gate = x["X"] @ x["W1"]
    return {"Y": gate / (1.0 + np.exp(-gate)) * (x["X"] @ x["W2"])}


_SOFTMAX_X = {"X": (-4.0, 4.0)}

ENTRIES = [
    SuiteKernel(
        "grouped_conv2d", "Grouped 2D convolution, 3x3, NCHW, padded input", "ml",
        grouped_conv2d,
        lambda s: 2 * 9 * s["N"] * s["G"] * s["FG"] * s["CG"] * s["H"] * s["W"],
        datasets(N=(1, 4), G=(32, 32), CG=(4, 4), FG=(4, 4), H=(28, 56), W=(28, 56)),
        {"N": 2, "G": 3, "CG": 2, "FG": 3, "H": 5, "W": 7}, peer=True),
    SuiteKernel(
        "dilated_conv2d", "Dilated 2D convolution, 3x3, dilation 2, NCHW, padded input", "ml",
        dilated_conv2d,
        lambda s: 2 * 9 * s["N"] * s["F"] * s["C"] * s["H"] * s["W"],
        datasets(N=(1, 1), C=(32, 64), H=(28, 56), W=(28, 56), F=(32, 64)),
        {"N": 1, "C": 3, "H": 6, "W": 7, "F": 4}, peer=True),
    SuiteKernel(
        "conv1d", "1D convolution, NCL, width K, padded input", "ml", conv1d,
        lambda s: 2 * s["N"] * s["F"] * s["C"] * s["L"] * s["K"],
        datasets(N=(1, 1), C=(64, 128), L=(512, 1024), F=(64, 128), K=(5, 5)),
        {"N": 2, "C": 3, "L": 11, "F": 4, "K": 3}, peer=True),
    SuiteKernel(
        "linear_bias_gelu", "Linear layer with bias fused with tanh-approximation GELU",
        "ml", linear_bias_gelu,
        lambda s: 2 * s["N"] * s["K"] * s["M"] + 10 * s["N"] * s["M"],
        datasets(N=(32, 128), K=(256, 768), M=(1024, 3072)),
        {"N": 5, "K": 7, "M": 9}, peer=True),
    SuiteKernel(
        "causal_scores", "Causal attention probabilities softmax(mask(Q K^T scale))", "ml",
        causal_scores,
        lambda s: 2 * s["S"] * s["S"] * s["D"] + 6 * s["S"] * s["S"],
        datasets(S=(256, 1024), D=(64, 64)),
        {"S": 9, "D": 5}, peer=True, input_ranges={"scale": (0.125, 0.125)}),
    SuiteKernel(
        "batched_transpose", "Batched transpose B x N x M -> B x M x N", "ml",
        batched_transpose, None,
        datasets(B=(8, 16), N=(128, 512), M=(256, 512)),
        {"B": 3, "N": 5, "M": 7}, peer=True),
    SuiteKernel(
        "batched_matmul", "Batched matrix product C[b] = A[b] B[b]", "ml", batched_matmul,
        lambda s: 2 * s["BATCH"] * s["N"] * s["M"] * s["K"],
        datasets(BATCH=(8, 16), N=(128, 256), M=(128, 256), K=(128, 256)),
        {"BATCH": 3, "N": 5, "M": 7, "K": 6}, peer=True),
    SuiteKernel(
        "col_mean", "Column means (reduction over axis 0)", "ml", col_mean,
        lambda s: s["N"] * s["M"] + s["M"],
        datasets(N=(512, 4096), M=(768, 1024)),
        {"N": 13, "M": 7}, peer=True),
    SuiteKernel(
        "softmax_cols", "Column softmax (softmax over axis 0)", "ml", softmax_cols,
        lambda s: 5 * s["N"] * s["M"],
        datasets(N=(256, 2048), M=(512, 1024)),
        {"N": 11, "M": 6}, peer=True, input_ranges=_SOFTMAX_X),
    SuiteKernel(
        "group_norm", "Group normalization, NCHW, with gamma, beta and eps", "ml", group_norm,
        lambda s: s["N"] * s["G"] * (8 * s["CG"] * s["H"] * s["W"] + 4),
        datasets(N=(1, 1), G=(32, 32), CG=(4, 10), H=(32, 64), W=(32, 64)),
        {"N": 2, "G": 3, "CG": 2, "H": 4, "W": 5}, peer=True,
        input_ranges={"eps": (1e-5, 1e-5)}),
    SuiteKernel(
        "swiglu", "SwiGLU feed-forward gate silu(X W1) * (X W2)", "ml", swiglu,
        lambda s: 4 * s["N"] * s["K"] * s["M"] + 5 * s["N"] * s["M"],
        datasets(N=(16, 32), K=(512, 1024), M=(1408, 2816)),
        {"N": 3, "K": 8, "M": 10}, peer=True),
]

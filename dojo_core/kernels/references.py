"""numpy references of the library kernels, written independently of the Dojo IR.

Each function takes ``(x, s)``: ``x`` maps every ``in``/``inout`` name of the kernel to a
float64 array (scalars as 0-d arrays), ``s`` maps every size name to its int value. It
returns a dict mapping every ``out``/``inout`` name to a float64 array of the declared
shape. The functions never modify their inputs and use whole-array numpy (no loops over
elements), so they stay fast at the default sizes; they are the ground truth the
interpreter and the compiled code are checked against (see ``dojo_core.kernels.reference``,
which casts the results to the declared dtypes).
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise, exact to float64 (via math.erf; numpy has none)."""
    return np.asarray(_ERF(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def _softmax_rows(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ----------------------------------------------------------------------------- linear algebra

def matmul(x, s):
    return {"C": x["A"] @ x["B"]}


def matmul_nt(x, s):
    return {"C": x["A"] @ x["B"].T}


def bmm(x, s):
    return {"Z": np.matmul(x["X"], x["Y"])}


def linear_relu(x, s):
    return {"Y": np.maximum(x["X"] @ x["W"] + x["bias"], 0.0)}


def gemv(x, s):
    return {"y": x["A"] @ x["x"]}


def axpy(x, s):
    return {"y": x["alpha"] * x["x"] + x["y"]}


# ----------------------------------------------------------------------------- normalization

def softmax(x, s):
    return {"Y": _softmax_rows(x["X"])}


def log_softmax(x, s):
    z = x["X"] - x["X"].max(axis=1, keepdims=True)
    return {"Y": z - np.log(np.exp(z).sum(axis=1, keepdims=True))}


def layernorm(x, s):
    X = x["X"]
    mu = X.mean(axis=1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=1, keepdims=True)          # biased, as in PyTorch
    return {"Y": (X - mu) / np.sqrt(var + x["eps"]) * x["gamma"] + x["beta"]}


def rmsnorm(x, s):
    X = x["X"]
    ms = (X * X).mean(axis=1, keepdims=True)
    return {"Y": X / np.sqrt(ms + x["eps"]) * x["gamma"]}


def batchnorm(x, s):
    per_channel = (slice(None), None, None)                    # broadcast [C] over NCHW
    mean, var = x["mean"][per_channel], x["var"][per_channel]
    gamma, beta = x["gamma"][per_channel], x["beta"][per_channel]
    return {"Y": (x["X"] - mean) / np.sqrt(var + x["eps"]) * gamma + beta}


# ----------------------------------------------------------------------------- elementwise

def gelu(x, s):
    X = x["X"]
    return {"Y": 0.5 * X * (1.0 + erf(X / math.sqrt(2.0)))}


def relu(x, s):
    return {"Y": np.maximum(x["X"], 0.0)}


def silu(x, s):
    X = x["X"]
    return {"Y": X / (1.0 + np.exp(-X))}


def add(x, s):
    return {"C": x["A"] + x["B"]}


# ----------------------------------------------------------------------------- reductions, data movement

def row_sum(x, s):
    return {"y": x["X"].sum(axis=1)}


def sum_squares(x, s):
    return {"s": np.asarray(np.dot(x["x"], x["x"]), dtype=np.float64)}


def transpose(x, s):
    return {"B": np.ascontiguousarray(x["A"].T)}


# ----------------------------------------------------------------------------- convolution, pooling

def conv2d(x, s):
    windows = sliding_window_view(x["X"], (3, 3), axis=(2, 3))   # [N, C, H, W, 3, 3]
    return {"Y": np.einsum("nchwij,fcij->nfhw", windows, x["Wt"], optimize=True)}


def depthwise_conv2d(x, s):
    windows = sliding_window_view(x["X"], (3, 3), axis=(2, 3))   # [N, C, H, W, 3, 3]
    return {"Y": np.einsum("nchwij,cij->nchw", windows, x["Wt"], optimize=True)}


def _windows_2x2(X, s):
    n, c, h, w = s["N"], s["C"], s["H"], s["W"]
    return X.reshape(n, c, h, 2, w, 2)


def maxpool2d(x, s):
    return {"Y": _windows_2x2(x["X"], s).max(axis=(3, 5))}


def avgpool2d(x, s):
    return {"Y": _windows_2x2(x["X"], s).mean(axis=(3, 5))}


# ----------------------------------------------------------------------------- attention

def attention(x, s):
    P = _softmax_rows((x["Q"] @ x["K"].T) * x["scale"])
    return {"O": P @ x["V"]}

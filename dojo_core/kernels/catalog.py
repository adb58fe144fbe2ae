"""The table describing every library kernel: KernelInfo and CATALOG.

Conventions, relied on by benchmarks (GFLOP/s, GB/s) and by the tests:

* ``flops(sizes)``: floating-point operations of the computation itself, counting one per
  add, subtract, multiply, divide, compare (max/min) and one per transcendental call (exp,
  log, erf, rsqrt, ...); work a straightforward kernel repeats without need (a per-row
  ``rsqrt`` evaluated per element) is not counted. ``None`` where no arithmetic is done
  (transpose), so no GFLOP/s figure is reported.
* ``bytes(sizes)``: the minimal traffic, every ``in`` element read once, every ``out``
  element written once, ``inout`` both, ``temp`` arrays never (they may live in cache);
  this equals the declared array footprint, which the tests check against the .dojo files.
* ``test_sizes`` and ``alt_sizes``: small instantiations (every size at most 64) for the
  interpreter tests; ``alt_sizes`` uses odd, non-power-of-two extents to catch bugs that
  depend on divisibility.
* ``input_ranges``: ``name -> (low, high)`` for uniform random inputs; names not listed get
  ``DEFAULT_RANGE``. ``low == high`` gives a constant (e.g. ``eps``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping, Optional

from . import references as ref

DEFAULT_RANGE = (-1.0, 1.0)
F32 = 4   # bytes per element; every library kernel is f32


class TableEntry:
    """What a frozen dataclass entry of a kernel table (KernelInfo, suite.SuiteKernel)
    shares: its mapping fields named in ``MAPPINGS`` are read-only copies, and
    ``range_of`` gives an input's random range."""

    MAPPINGS = ("input_ranges",)

    def __post_init__(self):
        for name in self.MAPPINGS:
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def range_of(self, array: str) -> tuple:
        """The (low, high) range of random values for an input array."""
        return tuple(self.input_ranges.get(array, DEFAULT_RANGE))


@dataclass(frozen=True, eq=False)
class KernelInfo(TableEntry):
    """What the library knows about one kernel besides its .dojo source.

    ``reference(inputs, sizes) -> outputs`` works in float64 (see references.py);
    ``flops`` is None when not meaningful; the mappings are read-only.
    """
    name: str
    title: str
    category: str
    reference: Callable[[dict, dict], dict]
    flops: Optional[Callable[[Mapping], int]]
    bytes: Callable[[Mapping], int]
    test_sizes: Mapping = field(default_factory=dict)
    alt_sizes: Mapping = field(default_factory=dict)
    input_ranges: Mapping = field(default_factory=dict)

    MAPPINGS = ("test_sizes", "alt_sizes", "input_ranges")


def _per_element(ops: int, arrays: int) -> tuple:
    """(flops, bytes) of a kernel that does ``ops`` operations per element of an N x M
    matrix and reads or writes ``arrays`` N x M arrays once each."""
    return (lambda s: ops * s["N"] * s["M"]), (lambda s: F32 * arrays * s["N"] * s["M"])


def _activation(name: str, title: str, ops: int, x_range=None) -> KernelInfo:
    """The entry of an elementwise activation Y = f(X) of an N x M matrix (the reference
    ``references.NAME``), ``ops`` operations per element, X drawn from ``x_range``."""
    return KernelInfo(name, title, "elementwise", getattr(ref, name), *_per_element(ops, 2),
                      {"N": 32, "M": 64}, {"N": 3, "M": 17},
                      {"X": x_range} if x_range else {})


_EPS = {"eps": (1e-5, 1e-5)}
_SOFTMAX_X = {"X": (-4.0, 4.0)}

_ENTRIES = [
    # ------------------------------------------------------------------ linear algebra
    KernelInfo(
        "matmul", "Matrix multiplication C = A @ B", "linear algebra", ref.matmul,
        lambda s: 2 * s["N"] * s["M"] * s["K"],
        lambda s: F32 * (s["N"] * s["K"] + s["K"] * s["M"] + s["N"] * s["M"]),
        {"N": 32, "M": 48, "K": 40}, {"N": 9, "M": 13, "K": 7}),
    KernelInfo(
        "matmul_nt", "Matrix multiplication with transposed B, C = A @ B^T", "linear algebra",
        ref.matmul_nt,
        lambda s: 2 * s["N"] * s["M"] * s["K"],
        lambda s: F32 * (s["N"] * s["K"] + s["M"] * s["K"] + s["N"] * s["M"]),
        {"N": 32, "M": 48, "K": 40}, {"N": 11, "M": 5, "K": 17}),
    KernelInfo(
        "bmm", "Batched matrix multiplication Z[b] = X[b] @ Y[b]", "linear algebra", ref.bmm,
        lambda s: 2 * s["B"] * s["N"] * s["M"] * s["K"],
        lambda s: F32 * s["B"] * (s["N"] * s["K"] + s["K"] * s["M"] + s["N"] * s["M"]),
        {"B": 3, "N": 16, "M": 24, "K": 20}, {"B": 2, "N": 5, "M": 7, "K": 9}),
    KernelInfo(
        "linear_relu", "Linear layer with bias and ReLU, Y = relu(X @ W + bias)",
        "linear algebra", ref.linear_relu,
        lambda s: 2 * s["N"] * s["M"] * s["K"] + 2 * s["N"] * s["M"],
        lambda s: F32 * (s["N"] * s["K"] + s["K"] * s["M"] + s["M"] + s["N"] * s["M"]),
        {"N": 16, "M": 24, "K": 40}, {"N": 5, "M": 7, "K": 11}),
    KernelInfo(
        "gemv", "Matrix-vector product y = A @ x", "linear algebra", ref.gemv,
        lambda s: 2 * s["N"] * s["K"],
        lambda s: F32 * (s["N"] * s["K"] + s["K"] + s["N"]),
        {"N": 64, "K": 48}, {"N": 13, "K": 29}),
    KernelInfo(
        "axpy", "In-place scaled vector addition y = alpha * x + y", "linear algebra", ref.axpy,
        lambda s: 2 * s["N"],
        lambda s: F32 * (1 + 3 * s["N"]),
        {"N": 64}, {"N": 37}),
    # ------------------------------------------------------------------ normalization
    KernelInfo(
        "softmax", "Row softmax", "normalization", ref.softmax, *_per_element(5, 2),
        {"N": 32, "M": 64}, {"N": 7, "M": 33}, _SOFTMAX_X),
    KernelInfo(
        "log_softmax", "Row log-softmax", "normalization", ref.log_softmax,
        lambda s: 6 * s["N"] * s["M"] + s["N"],
        lambda s: F32 * 2 * s["N"] * s["M"],
        {"N": 16, "M": 64}, {"N": 7, "M": 33}, _SOFTMAX_X),
    KernelInfo(
        "layernorm", "Layer normalization with gamma, beta and eps", "normalization",
        ref.layernorm,
        lambda s: s["N"] * (8 * s["M"] + 4),
        lambda s: F32 * (2 * s["N"] * s["M"] + 2 * s["M"] + 1),
        {"N": 16, "M": 64}, {"N": 5, "M": 31}, _EPS),
    KernelInfo(
        "rmsnorm", "RMS normalization with gamma and eps", "normalization", ref.rmsnorm,
        lambda s: s["N"] * (4 * s["M"] + 3),
        lambda s: F32 * (2 * s["N"] * s["M"] + s["M"] + 1),
        {"N": 16, "M": 64}, {"N": 5, "M": 31}, _EPS),
    KernelInfo(
        "batchnorm", "Batch normalization (inference), NCHW", "normalization", ref.batchnorm,
        lambda s: 4 * s["N"] * s["C"] * s["H"] * s["W"] + 2 * s["C"],
        lambda s: F32 * (2 * s["N"] * s["C"] * s["H"] * s["W"] + 4 * s["C"] + 1),
        {"N": 2, "C": 4, "H": 8, "W": 8}, {"N": 1, "C": 3, "H": 5, "W": 7},
        {**_EPS, "var": (0.5, 2.0)}),
    # ------------------------------------------------------------------ elementwise
    _activation("gelu", "GELU activation (erf form)", 5, (-3.0, 3.0)),
    _activation("relu", "ReLU activation", 1),
    _activation("silu", "SiLU (swish) activation", 4, (-4.0, 4.0)),
    KernelInfo(
        "add", "Elementwise addition C = A + B", "elementwise", ref.add, *_per_element(1, 3),
        {"N": 32, "M": 64}, {"N": 5, "M": 11}),
    # ------------------------------------------------------------------ reductions, data movement
    KernelInfo(
        "row_sum", "Row-wise sum", "reduction", ref.row_sum,
        lambda s: s["N"] * s["M"],
        lambda s: F32 * (s["N"] * s["M"] + s["N"]),
        {"N": 32, "M": 64}, {"N": 9, "M": 17}),
    KernelInfo(
        "sum_squares", "Sum of squares of a vector", "reduction", ref.sum_squares,
        lambda s: 2 * s["N"],
        lambda s: F32 * (s["N"] + 1),
        {"N": 64}, {"N": 37}),
    KernelInfo(
        "transpose", "Matrix transpose B = A^T", "data movement", ref.transpose,
        None,
        lambda s: F32 * 2 * s["N"] * s["M"],
        {"N": 32, "M": 48}, {"N": 7, "M": 13}),
    # ------------------------------------------------------------------ convolution, pooling
    KernelInfo(
        "conv2d", "2D convolution, 3x3, NCHW, padded input", "convolution", ref.conv2d,
        lambda s: 2 * 9 * s["N"] * s["F"] * s["C"] * s["H"] * s["W"],
        lambda s: F32 * (s["N"] * s["C"] * (s["H"] + 2) * (s["W"] + 2) + 9 * s["F"] * s["C"]
                         + s["N"] * s["F"] * s["H"] * s["W"]),
        {"N": 1, "C": 4, "H": 8, "W": 8, "F": 4}, {"N": 2, "C": 3, "H": 5, "W": 7, "F": 2}),
    KernelInfo(
        "depthwise_conv2d", "Depthwise 2D convolution, 3x3, NCHW, padded input", "convolution",
        ref.depthwise_conv2d,
        lambda s: 2 * 9 * s["N"] * s["C"] * s["H"] * s["W"],
        lambda s: F32 * (s["N"] * s["C"] * (s["H"] + 2) * (s["W"] + 2) + 9 * s["C"]
                         + s["N"] * s["C"] * s["H"] * s["W"]),
        {"N": 1, "C": 4, "H": 8, "W": 8}, {"N": 2, "C": 3, "H": 5, "W": 6}),
    KernelInfo(
        "maxpool2d", "Max pooling 2x2, stride 2, NCHW", "pooling", ref.maxpool2d,
        lambda s: 3 * s["N"] * s["C"] * s["H"] * s["W"],
        lambda s: F32 * 5 * s["N"] * s["C"] * s["H"] * s["W"],
        {"N": 1, "C": 4, "H": 8, "W": 8}, {"N": 2, "C": 3, "H": 5, "W": 3}),
    KernelInfo(
        "avgpool2d", "Average pooling 2x2, stride 2, NCHW", "pooling", ref.avgpool2d,
        lambda s: 4 * s["N"] * s["C"] * s["H"] * s["W"],
        lambda s: F32 * 5 * s["N"] * s["C"] * s["H"] * s["W"],
        {"N": 1, "C": 4, "H": 8, "W": 8}, {"N": 2, "C": 3, "H": 5, "W": 3}),
    # ------------------------------------------------------------------ attention
    KernelInfo(
        "attention", "Scaled dot-product attention, one head", "attention", ref.attention,
        lambda s: 4 * s["S"] * s["S"] * s["D"] + 5 * s["S"] * s["S"] + s["S"] * s["D"],
        lambda s: F32 * (4 * s["S"] * s["D"] + 1),
        {"S": 16, "D": 8}, {"S": 9, "D": 5}, {"scale": (0.1, 0.4)}),
]

CATALOG: Mapping = MappingProxyType({e.name: e for e in _ENTRIES})

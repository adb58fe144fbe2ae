"""The table of the benchmark suite: SuiteKernel entries, one per ``kernels/NAME.dojo``.

The suite is what the agents are measured on, distinct from the kernel library: no
``.steps`` file exists or applies here. Each entry module (``polybench_*.py``, ``ml_ops.py``)
defines ``ENTRIES``, a list of SuiteKernel; ``SUITE`` joins them by name.

Conventions (checked by ``tests/test_suite_kernels.py``):

* The ``.dojo`` file is written with ``f64`` for every floating-point array (PolyBench's
  ``DATA_TYPE``); ``dojo_core.suite.load(name, dtype="f32")`` gives the f32 twin. Kernels
  whose arithmetic is integral list their own ``dtypes`` (the first one is the file's).
* The header's default sizes are PolyBench's MEDIUM dataset; ``sizes["LARGE"]`` (and
  ``sizes["MEDIUM"]``) name the dataset sizes; ``test_sizes`` are small (every size at
  most 24) so the interpreter checks them in a fraction of a second.
* ``reference(x, s)`` follows ``dojo_core.kernels.references``: float64 inputs (every
  ``in``/``inout`` array), size values, returns float64 ``out``/``inout`` arrays. It is an
  independent numpy formulation of the PolyBench C source (or of the ML operator).
* ``peer``: the reference is a whole-array numpy expression (no Python loop over
  elements or rows) that a user could call instead: the benchmarks time it as "numpy".
* ``make_inputs(rng, s)``: float64 inputs for kernels that need structured data (a
  symmetric positive definite matrix for cholesky, a diagonally dominant one for lu);
  None draws every input uniformly from ``input_ranges`` (default [-1, 1]).
* ``flops(s)``: floating-point operations as counted in ``dojo_core.kernels.catalog``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping, Optional

DEFAULT_RANGE = (-1.0, 1.0)


@dataclass(frozen=True, eq=False)
class SuiteKernel:
    """What the suite knows about one kernel besides its .dojo source."""
    name: str
    title: str
    group: str                                  # "polybench/blas", ..., "ml"
    reference: Callable[[dict, dict], dict]
    flops: Optional[Callable[[Mapping], int]]
    sizes: Mapping                              # dataset name -> {size: value}
    test_sizes: Mapping
    peer: bool = False
    dtypes: tuple = ("f64", "f32")
    make_inputs: Optional[Callable] = None
    input_ranges: Mapping = field(default_factory=dict)

    def __post_init__(self):
        for name in ("sizes", "test_sizes", "input_ranges"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def range_of(self, array: str) -> tuple:
        return tuple(self.input_ranges.get(array, DEFAULT_RANGE))


def _collect() -> dict:
    from . import ml_ops, ml_quantized, polybench_blas, polybench_solvers, polybench_stencils
    table = {}
    for module in (polybench_blas, polybench_solvers, polybench_stencils, ml_ops, ml_quantized):
        for entry in module.ENTRIES:
            if entry.name in table:
                raise ValueError(f"suite kernel {entry.name!r} is defined twice")
            table[entry.name] = entry
    return table


SUITE = MappingProxyType(_collect())

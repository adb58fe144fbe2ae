"""The table of the benchmark suite: SuiteKernel entries, one per ``kernels/NAME.dojo``.

The suite is what the agents are measured on, distinct from the kernel library: no
``.steps`` file exists or applies here. Each entry module (``polybench_*.py``, ``ml_ops.py``)
defines ``ENTRIES``, a list of SuiteKernel; ``SUITE`` joins them by name.

Conventions (checked by ``tests/core/test_suite_kernels.py``):

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

from types import MappingProxyType

from . import ml_ops, ml_quantized, polybench_blas, polybench_solvers, polybench_stencils
from .entry import DEFAULT_RANGE, SuiteKernel  # noqa: F401  (the table's entry type)


def _collect() -> dict:
    table = {}
    for module in (polybench_blas, polybench_solvers, polybench_stencils, ml_ops, ml_quantized):
        for entry in module.ENTRIES:
            if entry.name in table:
                raise ValueError(f"suite kernel {entry.name!r} is defined twice")
            table[entry.name] = entry
    return table


SUITE = MappingProxyType(_collect())

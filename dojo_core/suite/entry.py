"""One entry of the benchmark suite (see ``catalog.py`` for the conventions)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from ..kernels.catalog import DEFAULT_RANGE, TableEntry  # noqa: F401  (DEFAULT_RANGE: re-exported)


@dataclass(frozen=True, eq=False)
class SuiteKernel(TableEntry):
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

    MAPPINGS = ("sizes", "test_sizes", "input_ranges")


def datasets(**extents) -> dict:
    """PolyBench's dataset sizes, ``{"MEDIUM": {size: value}, "LARGE": {size: value}}``,
    from one ``SIZE=(medium, large)`` pair per size, in the order given."""
    return {dataset: {name: pair[k] for name, pair in extents.items()}
            for k, dataset in enumerate(("MEDIUM", "LARGE"))}


def polybench(reference, group: str, summary: str, flops, sizes, test_sizes,
              **options) -> SuiteKernel:
    """The entry of a PolyBench kernel: named after its reference function and titled
    ``PolyBench LABEL: summary``, LABEL being PolyBench's own name (``-`` for ``_``, and
    without the ``k`` that makes k2mm and k3mm Python names)."""
    name = reference.__name__
    label = re.sub(r"^k(?=\d)", "", name).replace("_", "-")
    return SuiteKernel(name, f"PolyBench {label}: {summary}", group, reference, flops, sizes,
                       test_sizes, **options)

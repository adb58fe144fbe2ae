"""One entry of the benchmark suite (see ``catalog.py`` for the conventions)."""
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

"""The benchmark suite: kernels the agents did not see, on which they are measured.

PolyBench/C 4.2's thirty kernels translated to the Dojo IR (f64 as in PolyBench, and f32),
at its MEDIUM and LARGE datasets, plus ML operators the library does not have. Each kernel
has a numpy reference (``catalog.SuiteKernel``). Pure Python + numpy, like the library.

Guarantees:

* ``list_suite(group=None)`` is the sorted list of suite kernels (every ``kernels/*.dojo``
  has a catalog entry and vice versa; ``tests/core/test_suite_kernels.py`` checks it).
* ``load(name, dtype=None, sizes=None)`` parses the kernel with every ``f64`` array and
  local in ``dtype`` (default: the entry's first dtype), at ``sizes``: a dataset name
  (``"MEDIUM"``, ``"LARGE"``, ``"test"``) or a mapping of size values. A dtype the entry
  does not list raises ValueError; unknown names raise KeyError.
* ``random_inputs(name, program, seed)`` is deterministic and returns every ``in``/``inout``
  array in its declared shape and numpy dtype.
* ``reference(name, inputs, program)`` gives every ``out``/``inout`` array, computed in
  float64 and cast to the declared dtypes; ``inputs`` are not modified.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional, Union

import numpy as np

from .. import ir
from ..kernels import NUMPY_DTYPES, array_shape, dojo_file, random_values, run_reference
from .catalog import SUITE, SuiteKernel

__all__ = ["SUITE", "SuiteKernel", "SUITE_DIR", "list_suite", "suite_path", "info", "load",
           "random_inputs", "reference"]

SUITE_DIR = Path(__file__).resolve().parent / "kernels"
_F64 = re.compile(r"\bf64\b")


def list_suite(group: Optional[str] = None) -> list:
    """Suite kernel names, sorted; with ``group`` only those whose group starts with it."""
    return sorted(n for n, e in SUITE.items() if group is None or e.group.startswith(group))


def info(name: str) -> SuiteKernel:
    try:
        return SUITE[name]
    except KeyError:
        raise KeyError(f"no suite kernel named {name!r}") from None


def suite_path(name: str) -> Path:
    """The path of the kernel's ``.dojo`` file; KeyError for anything else."""
    path = dojo_file(SUITE_DIR, name)
    if path is None:
        raise KeyError(f"no suite kernel named {name!r}")
    return path


@lru_cache(maxsize=None)
def _parsed(name: str, dtype: str, mtime_ns: int) -> ir.Program:
    from ..parser import parse
    path = suite_path(name)
    text = path.read_text()
    if dtype != "f64":
        text = _F64.sub(dtype, text)
    return parse(text, str(path))


def load(name: str, dtype: Optional[str] = None,
         sizes: Union[None, str, Mapping] = None) -> ir.Program:
    """The kernel in ``dtype`` at ``sizes`` (see the module docstring)."""
    entry = info(name)
    dtype = dtype or entry.dtypes[0]
    if dtype not in entry.dtypes:
        raise ValueError(f"suite kernel {name} is defined for {', '.join(entry.dtypes)}, "
                         f"not {dtype}")
    program = _parsed(name, dtype, suite_path(name).stat().st_mtime_ns)
    if isinstance(sizes, str):
        sizes = entry.test_sizes if sizes == "test" else entry.sizes[sizes]
    return program.with_sizes(dict(sizes)) if sizes else program


def random_inputs(name: str, program: ir.Program, seed: int = 0) -> dict:
    entry = info(name)
    rng = np.random.default_rng(seed)
    made = entry.make_inputs(rng, program.size_values) if entry.make_inputs else {}
    arrays = {}
    for decl in program.arrays:
        if decl.kind not in ("in", "inout"):
            continue
        shape = array_shape(program, decl)
        dtype = np.dtype(NUMPY_DTYPES[decl.dtype])
        if decl.name in made:
            values = np.asarray(made[decl.name], dtype=np.float64)
            if values.shape != shape:
                raise ValueError(f"make_inputs of {name}.{decl.name} has shape {values.shape}, "
                                 f"declared {shape}")
        else:
            values = random_values(rng, dtype, *entry.range_of(decl.name), shape)
        arrays[decl.name] = np.asarray(values, dtype=dtype)
    return arrays


def reference(name: str, inputs: Mapping, program: ir.Program) -> dict:
    return run_reference(info(name).reference, name, inputs, program)

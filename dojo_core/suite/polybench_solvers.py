"""PolyBench/C 4.2 solvers, data mining and medley kernels (see ``catalog``)."""
from __future__ import annotations

from .catalog import SuiteKernel  # noqa: F401

ENTRIES = []

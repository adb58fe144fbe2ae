"""PolyBench/C 4.2 stencils (see ``catalog``)."""
from __future__ import annotations

from .catalog import SuiteKernel  # noqa: F401

ENTRIES = []

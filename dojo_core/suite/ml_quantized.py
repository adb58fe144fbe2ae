"""Quantized ML operators (integer dtypes, see ``catalog``)."""
from __future__ import annotations

from .catalog import SuiteKernel  # noqa: F401

ENTRIES = []

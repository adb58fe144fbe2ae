"""ML operators the kernel library does not have (see ``catalog``)."""
from __future__ import annotations

from .catalog import SuiteKernel  # noqa: F401

ENTRIES = []

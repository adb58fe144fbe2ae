"""Small helpers the bench scripts share for describing the machine and printing figures.

Owns: ``cpu_model`` (the CPU's name, from ``dojo_core.machine``), ``usable_cores`` (the
cores this process may run on), ``load_text`` (a load average as printed in headers and
footers), ``fixed`` (a number in a fixed-width column, "-" for None), ``ratio`` (a / b
when both are non-zero numbers, else None) and ``short`` (an exception in one line).

Guarantees: pure functions of their arguments (``cpu_model`` and ``usable_cores`` read the
machine); nothing is printed or written here.
"""
from __future__ import annotations

import os

from dojo_core.machine import cpu_info


def cpu_model() -> str:
    return cpu_info().model


def usable_cores():
    """The cores this process may run on (its affinity), else ``os.cpu_count()``."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def load_text(load) -> str:
    """'1.00 0.50 0.25' for the three figures of ``os.getloadavg()``."""
    return f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"


def fixed(v, width=7, digits=1) -> str:
    """``v`` right-aligned in ``width`` columns with ``digits`` decimals; "-" for None."""
    if v is None:
        return "-".rjust(width)
    return f"{v:{width}.{digits}f}"


def ratio(a, b):
    """a / b when both are non-zero numbers, else None."""
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a and b \
        else None


def short(exc: BaseException) -> str:
    """'Type: first | lines | of the message' (at most three lines)."""
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return f"{type(exc).__name__}: " + (" | ".join(lines[:3]) or "(no message)")

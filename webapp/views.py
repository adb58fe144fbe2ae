"""Views. The home page is a placeholder until the real web app lands.

Guarantee: the home page never fails because of the kernel library; if
``dojo_core.kernels`` is missing or broken, it shows an empty list.
"""
from __future__ import annotations

import logging

from django.shortcuts import render

log = logging.getLogger(__name__)


def library_kernels() -> list[str]:
    """Names of the library kernels, sorted; [] if the library cannot be read."""
    try:
        from dojo_core import kernels
        found = kernels.list_kernels()
        names = []
        for item in found:
            if isinstance(item, str):
                names.append(item)
            elif isinstance(item, tuple) and item:
                names.append(str(item[0]))
            else:
                names.append(str(getattr(item, "name", item)))
        return sorted(set(names))
    except Exception:                                   # noqa: BLE001 - the page must not 500
        log.warning("kernel library unavailable", exc_info=True)
        return []


def home(request):
    return render(request, "home.html", {"kernels": library_kernels()})

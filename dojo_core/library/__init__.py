"""Library generation (issue 8): the best verified kernels of a target as a C library.

    build_library(out, target, records, ...) -> manifest     build.py (select, replay, emit)
    load(directory) -> Library                                pyview.py (numpy calls)
    LibraryError, ArgumentError                               one-line refusals

Modules: select.py (which record per kernel and size), emit.py (sources, header,
provenance, manifest), testprog.py (the C test program), buildfiles.py (Makefile, CMake),
replay.py (other machines' sequences measured here), client.py (the web app's API).
Pure Python over the rest of dojo_core; no Django.
"""
from .build import build_library
from .pyview import ArgumentError, Library, load
from .select import LibraryError

__all__ = ["build_library", "load", "Library", "LibraryError", "ArgumentError"]

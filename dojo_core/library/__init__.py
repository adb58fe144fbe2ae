"""Library generation: the best verified kernels of a target as a C library.

    build_library(out, target, records, ...) -> manifest     build.py (select, replay, emit)
    load(directory) -> Library                                pyview.py (numpy calls)
    LibraryError, ArgumentError                               one-line refusals
    RunnerInfo, resolve_target, record_fingerprint            select.py (which machine a
    full_sizes, size_key                                      target means; size keys)

Modules: select.py (which record per kernel and size), emit.py (sources, header,
provenance, manifest), testprog.py (the C test program), buildfiles.py (Makefile, CMake),
replay.py (other machines' sequences measured here), client.py (the web app's API).
Pure Python over the rest of dojo_core; no Django.
"""
__all__ = ["build_library", "load", "Library", "LibraryError", "ArgumentError", "RunnerInfo",
           "resolve_target", "record_fingerprint", "full_sizes", "size_key"]

_HOME = {"build_library": "build", "load": "pyview", "Library": "pyview",
         "ArgumentError": "pyview", "LibraryError": "select", "RunnerInfo": "select",
         "resolve_target": "select", "record_fingerprint": "select", "full_sizes": "select",
         "size_key": "select"}


def __getattr__(name):
    """The public names, imported on first use (the command line imports this package to
    build its parser and must stay quick)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module
    return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)

"""Code generators (DESIGN.md section 5): C99 + OpenMP for CPUs (``generate_c``), with the
target descriptions of ``targets``; CUDA lives in ``codegen.cuda`` where present."""
from __future__ import annotations

from .c import CodegenError, generate_c, timing_entry
from .targets import TARGETS, Target, detect_host_target, get_target

__all__ = ["generate_c", "timing_entry", "CodegenError", "TARGETS", "Target",
           "detect_host_target", "get_target"]

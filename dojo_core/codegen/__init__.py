"""Code generators (DESIGN.md section 5): C99 + OpenMP for CPUs (``generate_c``), with the
target descriptions of ``targets``; CUDA lives in ``codegen.cuda`` where present;
``generate_c_mapped`` gives the same C with the IR line of each C line (``line_map``)."""
from __future__ import annotations

from .c import CodegenError, generate_c
from .c_entry import timing_entry
from .line_map import generate_c_mapped
from .targets import TARGETS, Target, detect_host_target, get_target

CUDA_TARGET = "cuda"


def generate(program, target=None) -> str:
    """The source of a checked program for ``target``: CUDA for ``"cuda"``, else C for a CPU
    target (a Target, a name of ``TARGETS``, or None for this machine).  Refusals: C's
    ``CodegenError``, CUDA's located ``CudaCodegenError``; an unknown target name raises
    ``get_target``'s error naming the known ones."""
    if target == CUDA_TARGET:
        from .cuda import generate_cuda          # the CUDA generator loads only when asked for
        return generate_cuda(program)
    return generate_c(program, target)


__all__ = ["generate", "generate_c", "generate_c_mapped", "timing_entry", "CodegenError", "TARGETS", "Target",
           "detect_host_target", "get_target", "CUDA_TARGET"]

"""Vector instructions (and stack references) in the generated assembly of library kernels
on the cross targets, for each of their schedule files (a report, not a test):

    python bench/cross_vector_counts.py matmul softmax conv2d

Needs the cross toolchains of tests/core/test_cross_targets.py (aarch64 gcc, clang-14 for RVV).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import re  # noqa: E402
from dojo_core import cross
from dojo_core.codegen import generate_c
from dojo_core.codegen.targets import TARGETS
from dojo_core.kernels import load_kernel, steps_files
from dojo_core.steps import read_steps, replay
STACK = {"aarch64": re.compile(r"\[sp\b|\[x29\b"), "riscv64": re.compile(r"\(sp\)|\(s0\)")}
for tname in ("arm-neon", "arm-sve", "riscv-rvv"):
    t = TARGETS[tname]
    for k in sys.argv[1:]:
        for p in steps_files(k):
            if p.name.count(".") == 2 and p.name.split(".")[1] != tname:
                continue
            prog = replay(load_kernel(k), [x for _, x in read_steps(p)], str(p))
            asm = cross.assembly(generate_c(prog, t), t)
            lines = [l.strip() for l in asm.splitlines()]
            stack = sum(1 for l in lines if STACK[t.arch].search(l))
            # vector stack spills: vector regs stored/loaded via stack
            vspill = sum(1 for l in lines if STACK[t.arch].search(l) and re.search(r"\b[qvz]\d+|\bv\d+", l.split("//")[0]))
            print(tname, p.name, cross.vector_instructions(asm, t), "stack refs", stack, "vector stack refs", vspill)

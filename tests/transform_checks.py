"""Shared checks of the transformation tests: apply steps with the checker after each, and
compare a transformed program's outputs with the original's on the interpreter."""
from __future__ import annotations

import numpy as np

from dojo_core import interp
from dojo_core.checker import check
from dojo_core.kernels import random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import apply_step


def applied(text: str, *steps):
    """The program of text after the steps; each intermediate program must check clean."""
    p = parse(text)
    for t in steps:
        p = apply_step(p, t)
        assert check(p) == [], f"{t}:\n{print_program(p)}"
    return p


def assert_same_outputs(before, after, seed: int = 3, rtol: float = 2e-4, atol: float = 2e-5):
    """after computes what before computes, on seeded random inputs."""
    x = random_inputs(before, seed)
    want, got = interp.run(before, x), interp.run(after, x)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol)

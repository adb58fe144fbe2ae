"""Shared checks of the transformation tests: apply steps with the checker after each,
compare a transformed program's outputs with the original's on the interpreter, check a
refusal's reason, walk at random (and check a walk's outputs), and find sizes small enough to test a library schedule at."""
from __future__ import annotations

import numpy as np
import pytest

from dojo_core import interp
from dojo_core.checker import check
from dojo_core.kernels import random_inputs
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.transforms import REGISTRY, NotApplicable, apply_step, explain
from dojo_core.walks import random_walk, replay


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


def assert_walk_keeps_outputs(original, first, seed: int, steps: int = 6):
    """``first`` (a program transformed from ``original``) checks clean, and so does a random
    walk of ``steps`` legal actions from it, whose outputs are the original's."""
    assert check(first) == []
    texts, final = random_walk(first, steps, seed)
    assert check(final) == [], texts
    assert_same_outputs(original, final)


def assert_refused(program, step: str, reason: str):
    """``step`` is not legal at ``program``: explain gives a reason starting with ``reason``
    and apply_step raises NotApplicable."""
    why = explain(program, step)
    assert why is not None and why.startswith(reason), why
    with pytest.raises(NotApplicable):
        apply_step(program, step)


def walk(program, rng, n: int, kinds, mine, prefer: float):
    """A random walk of up to n legal steps from program, yielding (step texts so far, program
    after them) after each: a step of the kinds in ``kinds`` (in that order of enumeration),
    one of the kinds in ``mine`` with probability ``prefer`` when one applies."""
    history = []
    for _ in range(n):
        texts = [t for k in kinds for t in REGISTRY[k].enumerate(program)]
        ours = [t for t in texts if t.split()[0] in mine]
        if not texts:
            break
        text = rng.choice(ours if ours and rng.random() < prefer else texts)
        program = apply_step(program, text)
        history.append(text)
        yield history, program


def replay_or_none(program, texts):
    """The program after the step texts, or None when one of them does not apply."""
    try:
        return replay(program, texts)
    except NotApplicable:
        return None


def scaled(default, texts):
    """(small program, scheduled program) for the steps ``texts`` of a kernel at default
    sizes: every size divided by 8, 4 or 2 (the first that the steps apply at); failing
    that, sizes divided one at a time, each by the largest of 8, 4, 2 that keeps every step
    applicable (tiles tuned to a default size, like conv2d's 8-pixel blocks of W = 56, need
    that size kept).  None when no size could be made smaller."""
    for divisor in (8, 4, 2):
        small = default.with_sizes({k: max(1, v // divisor) for k, v in default.sizes})
        scheduled = replay_or_none(small, texts)
        if scheduled is not None:
            return small, scheduled
    sizes = dict(default.sizes)
    for key in list(sizes):
        for divisor in (8, 4, 2):
            trial = {**sizes, key: max(1, default.size_values[key] // divisor)}
            if trial[key] == sizes[key]:
                continue
            if replay_or_none(default.with_sizes(trial), texts) is not None:
                sizes = trial
                break
    if sizes == dict(default.sizes):
        return None
    small = default.with_sizes(sizes)
    return small, replay(small, texts)

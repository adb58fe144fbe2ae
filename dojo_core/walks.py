"""Random walks over legal actions: the property that guards the product's promise.

`random_walk(program, steps, seed)` applies `steps` actions drawn uniformly (seeded) from
`actions()` of each successive state and returns the step texts with the final program.
Used by the property tests, by the random agent and by the engine benchmark.
"""
from __future__ import annotations

import random

from .transforms import actions, apply_step


def random_walk(program, steps: int, seed: int, kinds=None):
    """(texts, final program). Deterministic in (program, steps, seed). Stops early only
    when a state has no legal action. `kinds` restricts the transformations drawn from."""
    rng = random.Random(seed)
    texts = []
    for _ in range(steps):
        choices = [a for a in actions(program) if kinds is None or a.kind in kinds]
        if not choices:
            break
        # draw the transformation kind first so that the many split factors do not
        # crowd out the rarer moves
        by_kind = {}
        for a in choices:
            by_kind.setdefault(a.kind, []).append(a)
        kind = rng.choice(sorted(by_kind))
        action = rng.choice(by_kind[kind])
        program = apply_step(program, action.text)
        texts.append(action.text)
    return texts, program


def replay(program, texts):
    """The program after applying step texts in order (NotApplicable if one is illegal)."""
    for text in texts:
        program = apply_step(program, text)
    return program

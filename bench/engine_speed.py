"""The engine's own speed: time of actions() and of one apply on matmul, softmax and
conv2d (default sizes) after 0, 10 and 30 seeded random steps. 'cold' clears every cache
before each measurement (a state and all its statement pairs seen for the first time);
'walk' keeps the caches of the previous state, as an agent or a person stepping does.

    python bench/engine_speed.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dojo_core import deps  # noqa: E402
from dojo_core.kernels import load_kernel  # noqa: E402
from dojo_core.transforms import actions, apply_step  # noqa: E402
from dojo_core.walks import random_walk  # noqa: E402


def cold(fn):
    deps.clear_caches()
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    print(f"{'kernel':10s} {'steps':>5s} {'#actions':>8s} {'actions() cold ms':>18s} "
          f"{'actions() walk ms':>18s} {'apply ms':>9s}")
    for name in ("matmul", "softmax", "conv2d"):
        for steps in (0, 10, 30):
            program = load_kernel(name)
            _, program = random_walk(program, steps, args.seed)
            _, previous = random_walk(load_kernel(name), max(0, steps - 1), args.seed)
            deps.clear_caches()
            actions(previous)
            t = time.perf_counter()
            actions(program)
            walk_ms = (time.perf_counter() - t) * 1e3
            t_actions, t_apply, found = [], [], []
            for _ in range(args.repeats):
                dt, found = cold(lambda: actions(program))
                t_actions.append(dt)
                if not found:
                    continue
                # one apply: the first non-annotation action (a structural rewrite)
                step = next((a.text for a in found if a.kind not in
                             ("parallelize", "vectorize", "unroll", "bind")), found[0].text)
                dt, _ = cold(lambda: apply_step(program, step))
                t_apply.append(dt)
            apply_ms = f"{statistics.median(t_apply) * 1e3:9.2f}" if t_apply else f"{'-':>9s}"
            print(f"{name:10s} {steps:5d} {len(found):8d} "
                  f"{statistics.median(t_actions) * 1e3:18.1f} {walk_ms:18.1f} {apply_ms}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

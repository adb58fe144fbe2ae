"""Seeded random walks of legal actions over every library kernel (a property check at
scale, not a unit test): each walk's final program must check clean, replay identically
from its step texts, and match the untransformed kernel's outputs on the interpreter.

    python bench/random_walks.py --walks-per-kernel 10 --steps 8
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

from dojo_core.kernels import list_kernels  # noqa: E402
from test_random_walks import walk_and_compare  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--walks-per-kernel", type=int, default=10)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args(argv)
    import test_random_walks
    test_random_walks.STEPS = args.steps
    kinds = collections.Counter()
    walks = failures = 0
    start = time.time()
    for name in list_kernels():
        for seed in range(args.first_seed, args.first_seed + args.walks_per_kernel):
            walks += 1
            try:
                texts = walk_and_compare(name, seed)
                kinds.update(t.split()[0] for t in texts)
            except Exception as exc:  # report and go on: the count is the result
                failures += 1
                print(f"FAIL {name} seed {seed}: {str(exc).splitlines()[0][:300]}")
    print(f"{walks} walks of {args.steps} steps over {len(list_kernels())} kernels: "
          f"{walks - failures} kept their outputs, {failures} failed "
          f"({time.time() - start:.1f} s)")
    print("steps applied per transformation:", dict(sorted(kinds.items())))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

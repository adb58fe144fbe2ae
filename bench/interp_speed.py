"""The reference interpreter's time per library kernel at its test sizes (median of a few
runs, after one warm-up that includes translating the IR), checked against the numpy
reference in the same run.

    python bench/interp_speed.py [--repeats 5] [--cap 64]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dojo_core import interp  # noqa: E402
from dojo_core.kernels import info, list_kernels, load_kernel, random_inputs, reference  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cap", type=int, default=None,
                    help="instead of the test sizes, every size = min(default, CAP)")
    args = ap.parse_args(argv)
    print(f"{'kernel':18s} {'test sizes':34s} {'first run ms':>12s} {'median ms':>10s} match")
    worst = 0.0
    for name in list_kernels():
        if args.cap:
            default = load_kernel(name)
            program = default.with_sizes({k: min(v, args.cap) for k, v in default.sizes})
        else:
            program = load_kernel(name, info(name).test_sizes)
        inputs = random_inputs(program, 0)
        t = time.perf_counter()
        out = interp.run(program, inputs)
        first = time.perf_counter() - t
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            interp.run(program, inputs)
            times.append(time.perf_counter() - t)
        ref = reference(name, inputs, program.size_values)
        ok = all(np.allclose(out[k], ref[k], rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(ref[k]).max())))
                 for k in ref)
        sizes = ", ".join(f"{k}={v}" for k, v in program.sizes)
        worst = max(worst, first)
        print(f"{name:18s} {sizes:34s} {first * 1e3:12.1f} {statistics.median(times) * 1e3:10.2f} "
              f"{'yes' if ok else 'NO'}")
    print(f"slowest first run: {worst * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

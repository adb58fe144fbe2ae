"""``parallelize outer`` alone against the untransformed kernel, at one thread (a benchmark,
not a test).

    python bench/parallel_outer.py [--dataset MEDIUM] [--rounds 5] [--min-time 0.1]
                                   [--kernels gemm,...] [--out results.json]

For every library kernel (default sizes) and every suite kernel (``--dataset``, each dtype)
that the agents' ``parallelize outer`` macro applies to, it builds the untransformed kernel
and the kernel after those steps, checks that both give the same outputs, and times them at
ONE thread, in ``--rounds`` rounds in which the two run back to back; the figure is the
median over rounds of each one's median. An OpenMP region at one thread should cost next to
nothing: the ratio ``par/base`` (time ratio) should be 1 within noise. ``slower`` flags a
ratio over 1.10. Before the parallel loops became outlined functions with ``restrict``
parameters (``dojo_core/codegen/parallel.py``), gcc stopped vectorizing many of these nests
inside the region (PolyBench 2mm f32 256^3: 8x slower at one thread).

The load average is printed at the start and the end.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dojo_core import harness                                        # noqa: E402
from dojo_core.agents.macros import parallelize_outer_steps            # noqa: E402
from dojo_core.codegen import detect_host_target                       # noqa: E402
from dojo_core.kernels import list_kernels, load_kernel                # noqa: E402
from dojo_core.kernels import random_inputs as library_inputs          # noqa: E402
from dojo_core import suite                                            # noqa: E402
from dojo_core.walks import replay                                     # noqa: E402


def cases(args):
    """(label, untransformed program, inputs) of every kernel asked for."""
    wanted = set(args.kernels.split(",")) if args.kernels else None
    for name in list_kernels():
        if wanted is None or name in wanted:
            program = load_kernel(name)
            yield f"{name} (library)", program, library_inputs(program, 0)
    for name in suite.list_suite():
        if wanted is not None and name not in wanted:
            continue
        for dtype in suite.info(name).dtypes:
            program = suite.load(name, dtype, args.dataset)
            yield f"{name} {dtype}", program, suite.random_inputs(name, program, 0)


def time_once(lib, inputs, args) -> float:
    return harness.measure(lib.program, inputs, min_time=args.min_time, min_reps=3,
                           threads=1, library=lib)["median_s"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="MEDIUM")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.1)
    parser.add_argument("--kernels", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    target = detect_host_target()
    print(f"# parallelize outer alone vs untransformed, 1 thread, target {target.name}, "
          f"load {load_start[0]:.2f}", flush=True)
    print(f"{'kernel':28s} {'base ms':>10s} {'par ms':>10s} {'par/base':>9s}  steps")
    rows = []
    for label, program, inputs in cases(args):
        steps = parallelize_outer_steps(program)
        if not steps:
            continue
        row = {"kernel": label, "steps": steps}
        try:
            parallel = replay(program, steps)
            base_lib, par_lib = harness.build(program, target), harness.build(parallel, target)
            want = harness.run_c(program, inputs, library=base_lib, threads=1)
            got = harness.run_c(parallel, inputs, library=par_lib, threads=1)
            errors = harness.compare(got, want, program)
            if not all(e <= 1 for e in errors.values()):
                raise RuntimeError(f"outputs differ: {errors}")
            base, par = [], []
            for _ in range(args.rounds):
                base.append(time_once(base_lib, inputs, args))
                par.append(time_once(par_lib, inputs, args))
            row.update(base_s=statistics.median(base), par_s=statistics.median(par))
            row["ratio"] = row["par_s"] / row["base_s"]
            flag = "  slower" if row["ratio"] > 1.10 else ""
            print(f"{label:28s} {1e3 * row['base_s']:10.4g} {1e3 * row['par_s']:10.4g} "
                  f"{row['ratio']:9.3f}  {'; '.join(steps)}{flag}", flush=True)
        except Exception as exc:                                        # noqa: BLE001
            row["error"] = str(exc).splitlines()[0][:200]
            print(f"{label:28s} ERROR {row['error']}", flush=True)
        rows.append(row)
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    load_end = os.getloadavg()
    summary = {
        "target": target.name, "load_start": load_start[0], "load_end": load_end[0],
        "kernels": len(ratios),
        "geomean_ratio": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
        "worst": max(rows, key=lambda r: r.get("ratio", 0), default=None),
        "slower": [r["kernel"] for r in rows if r.get("ratio", 0) > 1.10],
    }
    print(f"# {len(ratios)} kernels, geomean par/base {summary['geomean_ratio']:.3f}, "
          f"worst {summary['worst']['kernel']} {summary['worst'].get('ratio', 0):.3f}, "
          f"over 1.10: {', '.join(summary['slower']) or 'none'}; "
          f"load {load_start[0]:.2f} -> {load_end[0]:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

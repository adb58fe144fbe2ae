"""The TVM MetaSchedule peer of bench/agents.py: tune matmul N x K @ K x M (f32) on this CPU
with a given number of measured trials, then time the best schedule (a benchmark helper).

    python bench/agents_tvm.py --trials 100 [--size 512] [--threads 1] [--min-time 0.2]

Prints one JSON object: trials, tuning_s, median_s of the tuned kernel (timed here like the
other contenders: warm-up, repetitions for at least --min-time, median), a numpy check of
the result, the TVM version.  Needs ``apache-tvm`` (0.27 from PyPI, with
``apache-tvm-ffi==0.1.14.post1``, xgboost and cloudpickle beside it; see
/work/shared/PERF.md) in the environment that runs it; bench/agents.py runs it in a child
process and skips it cleanly when TVM is absent.  The target is given as a JSON dict
(``llvm`` with ``-mcpu`` of this host and ``num-cores``); psutil is needed by its builder,
whose 30 s default timeouts are raised (a builder process alone can take longer to start on
a loaded 2-core machine).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.2)
    args = ap.parse_args(argv)
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import tvm
    import tvm.s_tir.meta_schedule as ms
    from tvm import te

    n = args.size
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")
    mod = tvm.IRModule({"main": func})
    mcpu = tvm.target.codegen.llvm_get_system_cpu() if hasattr(tvm.target, "codegen") else "native"
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": args.threads})
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tvm-ms-") as work:
        database = ms.tune_tir(mod, target, work, max_trials_global=args.trials,
                               num_trials_per_iter=min(32, args.trials),
                               num_tuning_cores=args.threads, seed=0,
                               # the default 30 s limits are shorter than a builder or
                               # runner process takes to start on a loaded 2-core machine
                               builder=ms.builder.LocalBuilder(timeout_sec=600),
                               runner=ms.runner.LocalRunner(timeout_sec=600))
        sch = ms.tir_integration.compile_tir(database, mod, target)
    tuning_s = time.monotonic() - started
    if sch is None:
        print(json.dumps({"error": "no valid schedule found", "trials": args.trials}))
        return 1
    lib = tvm.compile(sch.mod, target=target)
    dev = tvm.cpu()
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype("float32")
    b = rng.uniform(-1, 1, (n, n)).astype("float32")
    ta, tb = tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev)
    tc = tvm.runtime.tensor(np.zeros((n, n), "float32"), dev)
    lib["main"](ta, tb, tc)
    ok = bool(np.allclose(tc.numpy(), a @ b, rtol=1e-3, atol=1e-3))
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < args.min_time:
        t0 = time.perf_counter()
        lib["main"](ta, tb, tc)
        times.append(time.perf_counter() - t0)
    print(json.dumps({"trials": args.trials, "tuning_s": tuning_s,
                      "median_s": statistics.median(times), "min_s": min(times),
                      "verified": ok, "tvm": tvm.__version__, "target": str(target)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

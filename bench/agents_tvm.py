"""The TVM MetaSchedule peer of bench/agents.py: tune one library kernel at its default sizes
(f32) on this CPU with a given number of measured trials, then time the best schedule (a
benchmark helper).

    python bench/agents_tvm.py --kernel matmul|softmax|layernorm|conv2d --trials 100
                               [--threads 1] [--min-time 0.2] [--size N]

The kernels are the TVM tensor-expression twins of ``dojo_core/kernels/NAME.dojo`` (same
shapes, same arithmetic; layernorm's ``eps`` is the constant 1e-5; conv2d's input is
already padded, as in the library kernel); ``--size`` makes matmul N x N x N.  Prints one
JSON object: kernel, trials, tuning_s, median_s and min_s of the tuned kernel (timed here
like the other contenders: warm-up, repetitions for at least --min-time, median), a numpy
check of the result, the TVM version.  Needs ``apache-tvm`` (0.27 from PyPI, with
``apache-tvm-ffi==0.1.14.post1``, xgboost, cloudpickle and psutil beside it; see
shared/PERF.md beside the checkout) in the environment that runs it, usually a venv of its own
(bench/agents.py ``--tvm-python``).  Tuning, target and timing are bench/tvm_common.py's,
shared with bench/suite_tvm.py (the suite's twins).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import tvm_common  # noqa: E402

EPS = 1e-5


def definitions(te, np, size):
    """kernel -> (tensors of the prim func, inputs maker, numpy reference)."""
    def matmul():
        n = size or 512
        A = te.placeholder((n, n), "float32", name="A")
        B = te.placeholder((n, n), "float32", name="B")
        k = te.reduce_axis((0, n), name="k")
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return [A, B, C], lambda a, b: a @ b

    def softmax():
        n, m = 4096, 1024
        X = te.placeholder((n, m), "float32", name="X")
        k = te.reduce_axis((0, m), name="k")
        mx = te.compute((n,), lambda i: te.max(X[i, k], axis=k), name="mx")
        E = te.compute((n, m), lambda i, j: te.exp(X[i, j] - mx[i]), name="E")
        k2 = te.reduce_axis((0, m), name="k2")
        S = te.compute((n,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
        Y = te.compute((n, m), lambda i, j: E[i, j] / S[i], name="Y")

        def ref(x):
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        return [X, Y], ref

    def layernorm():
        n, m = 4096, 1024
        X = te.placeholder((n, m), "float32", name="X")
        g = te.placeholder((m,), "float32", name="gamma")
        b = te.placeholder((m,), "float32", name="beta")
        k = te.reduce_axis((0, m), name="k")
        total = te.compute((n,), lambda i: te.sum(X[i, k], axis=k), name="total")
        mu = te.compute((n,), lambda i: total[i] / m, name="mu")
        k2 = te.reduce_axis((0, m), name="k2")
        sq = te.compute((n,), lambda i: te.sum((X[i, k2] - mu[i]) * (X[i, k2] - mu[i]), axis=k2),
                        name="sq")
        Y = te.compute((n, m), lambda i, j: (X[i, j] - mu[i]) * te.rsqrt(sq[i] / m + EPS) * g[j] + b[j],
                       name="Y")

        def ref(x, gamma, beta):
            mean = x.mean(axis=1, keepdims=True)
            return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + EPS) * gamma + beta
        return [X, g, b, Y], ref

    def conv2d():
        nb, c, h, w, f = 1, 64, 56, 56, 64
        X = te.placeholder((nb, c, h + 2, w + 2), "float32", name="X")
        W = te.placeholder((f, c, 3, 3), "float32", name="Wt")
        rc, rh, rw = (te.reduce_axis((0, e), name=nm) for e, nm in ((c, "c"), (3, "kh"), (3, "kw")))
        Y = te.compute((nb, f, h, w), lambda n_, f_, h_, w_: te.sum(
            X[n_, rc, h_ + rh, w_ + rw] * W[f_, rc, rh, rw], axis=[rc, rh, rw]), name="Y")

        def ref(x, wt):
            cols = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
            return np.einsum("nchwij,fcij->nfhw", cols, wt, optimize=True)
        return [X, W, Y], ref

    return {"matmul": matmul, "softmax": softmax, "layernorm": layernorm, "conv2d": conv2d}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="matmul", choices=("matmul", "softmax", "layernorm", "conv2d"))
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--size", type=int, default=None, help="matmul: N = M = K (default 512)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.2)
    args = ap.parse_args(argv)
    tvm_common.set_threads(args.threads)
    import numpy as np
    import tvm
    from tvm import te

    tensors, reference = definitions(te, np, args.size)[args.kernel]()
    target = tvm_common.host_target(args.threads)
    lib, tuning_s = tvm_common.tune(tensors, target, args.trials, args.threads)
    if lib is None:
        print(json.dumps({"kernel": args.kernel, "error": "no valid schedule found",
                          "trials": args.trials}))
        return 1
    rng = np.random.default_rng(0)
    ins = [rng.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    out_shape = [int(d) for d in tensors[-1].shape]
    args_dev = tvm_common.device_arrays(ins + [np.zeros(out_shape, "float32")])
    lib["main"](*args_dev)
    ok = bool(np.allclose(args_dev[-1].numpy(), reference(*ins), rtol=1e-3, atol=1e-3))
    timing = tvm_common.time_call(lib["main"], args_dev, args.min_time)
    print(json.dumps({"kernel": args.kernel, "trials": args.trials, "tuning_s": tuning_s,
                      "median_s": timing["median_s"], "min_s": timing["min_s"],
                      "verified": ok, "tvm": tvm.__version__, "target": str(target)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

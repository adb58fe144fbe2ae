"""The TVM MetaSchedule peer of bench/suite.py: tensor-expression (TE) twins of suite
kernels, tuned on this CPU at a given number of measured trials, then run on the suite's
inputs and timed (a benchmark helper, run in TVM's own environment).

    python bench/suite_tvm.py --kernel gemm [--dtype f64] [--sizes MEDIUM|LARGE|test|JSON]
                              [--trials 100] [--threads 1] [--rounds 3] [--min-time 0.1]
                              [--inputs in.npz] [--outputs out.npz] [--seed 0]
    python bench/suite_tvm.py --list          # {"twins": [...], "tvm": version or null, "error"}

The twins (``TWINS``) follow the ``.dojo`` files of ``dojo_core/suite/kernels``: the same
arrays under the same names and shapes (sizes: the suite's datasets, read from
``dojo_core.suite``, or a JSON object of size values), the same arithmetic in the row's
dtype (f64 or f32, accumulating in it). Scalars (alpha, beta) are 0-d tensors. TE is
functional, so an ``inout`` array is an input placeholder and an output tensor of the same
name. Where a TE compute cannot take PolyBench's iteration domain, the twin computes more
and selects: syrk and syr2k compute the full N x N product and keep the input's values
above the diagonal (twice PolyBench's flops; MetaSchedule cannot skip the upper half).

Inputs: ``--inputs`` (an npz of the suite's inputs by array name, what bench/suite.py
passes: the same arrays the other contenders run on), else drawn uniformly from each
entry's ``input_ranges`` (default [-1, 1]) with ``--seed``. The outputs are computed once,
written to ``--outputs`` (npz by array name) when given, and compared here with the suite
entry's numpy reference (float64, cast to the dtype) under the harness's tolerance of the
dtype (``max_error`` <= 1 passes, as ``dojo_core.harness.compare`` counts it); bench/suite.py
checks them again with ``harness.compare`` itself. Timing: ``--rounds`` rounds of
``tvm_common.time_call`` (warm-up, >= 3 repetitions and >= ``--min-time`` s); the figure is
the median over rounds of the per-round medians.

Prints, as its last stdout line, one JSON object: kernel, dtype, sizes, trials, threads,
tuning_s (0 at ``--trials 0``: the default, untuned schedule), median_s, min_s, rounds,
verified, max_error, tvm (version), target; or ``{"error": ...}`` with exit status 1.

Imports from the checkout only ``dojo_core.suite`` (numpy-level: its catalog, references and
dataset sizes; the parser is never loaded) and ``bench.tvm_common``, so it runs in a venv
holding apache-tvm and numpy only.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import tvm_common  # noqa: E402

DTYPES = {"f64": "float64", "f32": "float32"}
# dojo_core.harness.TOLERANCE of the floating-point dtypes: (rtol, atol relative to the
# reference's largest magnitude)
TOLERANCE = {"f64": (1e-9, 1e-9), "f32": (1e-4, 1e-5)}
GELU_C = 0.7978845608028654                     # sqrt(2 / pi), as written in the .dojo file


# ---------------------------------------------------------------------------- the twins
# Each twin is twin(te, s, dt) -> (inputs, outputs): lists of (suite array name, tensor);
# the prim func's arguments are the inputs then the outputs, in these orders.

def _scalar(te, name, dt):
    return te.placeholder((), dt, name=name)


def gemm(te, s, dt):
    ni, nj, nk = s["NI"], s["NJ"], s["NK"]
    alpha, beta = _scalar(te, "alpha", dt), _scalar(te, "beta", dt)
    C = te.placeholder((ni, nj), dt, name="C")
    A = te.placeholder((ni, nk), dt, name="A")
    B = te.placeholder((nk, nj), dt, name="B")
    k = te.reduce_axis((0, nk), name="k")
    AB = te.compute((ni, nj), lambda i, j: te.sum(alpha[()] * A[i, k] * B[k, j], axis=k), name="AB")
    Co = te.compute((ni, nj), lambda i, j: C[i, j] * beta[()] + AB[i, j], name="C_out")
    return [("alpha", alpha), ("beta", beta), ("C", C), ("A", A), ("B", B)], [("C", Co)]


def k2mm(te, s, dt):
    ni, nj, nk, nl = s["NI"], s["NJ"], s["NK"], s["NL"]
    alpha, beta = _scalar(te, "alpha", dt), _scalar(te, "beta", dt)
    A = te.placeholder((ni, nk), dt, name="A")
    B = te.placeholder((nk, nj), dt, name="B")
    C = te.placeholder((nj, nl), dt, name="C")
    D = te.placeholder((ni, nl), dt, name="D")
    k = te.reduce_axis((0, nk), name="k")
    tmp = te.compute((ni, nj), lambda i, j: te.sum(alpha[()] * A[i, k] * B[k, j], axis=k),
                     name="tmp")
    k2 = te.reduce_axis((0, nj), name="k2")
    TC = te.compute((ni, nl), lambda i, j: te.sum(tmp[i, k2] * C[k2, j], axis=k2), name="TC")
    Do = te.compute((ni, nl), lambda i, j: D[i, j] * beta[()] + TC[i, j], name="D_out")
    return [("alpha", alpha), ("beta", beta), ("A", A), ("B", B), ("C", C), ("D", D)], \
        [("D", Do)]


def k3mm(te, s, dt):
    ni, nj, nk, nl, nm = s["NI"], s["NJ"], s["NK"], s["NL"], s["NM"]
    A = te.placeholder((ni, nk), dt, name="A")
    B = te.placeholder((nk, nj), dt, name="B")
    C = te.placeholder((nj, nm), dt, name="C")
    D = te.placeholder((nm, nl), dt, name="D")
    k = te.reduce_axis((0, nk), name="k")
    E = te.compute((ni, nj), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="E")
    k2 = te.reduce_axis((0, nm), name="k2")
    F = te.compute((nj, nl), lambda i, j: te.sum(C[i, k2] * D[k2, j], axis=k2), name="F")
    k3 = te.reduce_axis((0, nj), name="k3")
    G = te.compute((ni, nl), lambda i, j: te.sum(E[i, k3] * F[k3, j], axis=k3), name="G")
    return [("A", A), ("B", B), ("C", C), ("D", D)], [("G", G)]


def syrk(te, s, dt):
    m, n = s["M"], s["N"]
    alpha, beta = _scalar(te, "alpha", dt), _scalar(te, "beta", dt)
    C = te.placeholder((n, n), dt, name="C")
    A = te.placeholder((n, m), dt, name="A")
    k = te.reduce_axis((0, m), name="k")
    AA = te.compute((n, n), lambda i, j: te.sum(alpha[()] * A[i, k] * A[j, k], axis=k), name="AA")
    Co = te.compute((n, n), lambda i, j: te.if_then_else(j <= i, C[i, j] * beta[()] + AA[i, j],
                                                         C[i, j]), name="C_out")
    return [("alpha", alpha), ("beta", beta), ("C", C), ("A", A)], [("C", Co)]


def syr2k(te, s, dt):
    m, n = s["M"], s["N"]
    alpha, beta = _scalar(te, "alpha", dt), _scalar(te, "beta", dt)
    C = te.placeholder((n, n), dt, name="C")
    A = te.placeholder((n, m), dt, name="A")
    B = te.placeholder((n, m), dt, name="B")
    k = te.reduce_axis((0, m), name="k")
    AB = te.compute((n, n), lambda i, j: te.sum(A[j, k] * alpha[()] * B[i, k]
                                                + B[j, k] * alpha[()] * A[i, k], axis=k),
                    name="AB")
    Co = te.compute((n, n), lambda i, j: te.if_then_else(j <= i, C[i, j] * beta[()] + AB[i, j],
                                                         C[i, j]), name="C_out")
    return [("alpha", alpha), ("beta", beta), ("C", C), ("A", A), ("B", B)], [("C", Co)]


def atax(te, s, dt):
    m, n = s["M"], s["N"]
    A = te.placeholder((m, n), dt, name="A")
    x = te.placeholder((n,), dt, name="x")
    j = te.reduce_axis((0, n), name="j")
    tmp = te.compute((m,), lambda i: te.sum(A[i, j] * x[j], axis=j), name="tmp")
    i2 = te.reduce_axis((0, m), name="i2")
    y = te.compute((n,), lambda jj: te.sum(A[i2, jj] * tmp[i2], axis=i2), name="y")
    return [("A", A), ("x", x)], [("y", y)]


def bicg(te, s, dt):
    m, n = s["M"], s["N"]
    A = te.placeholder((n, m), dt, name="A")
    p = te.placeholder((m,), dt, name="p")
    r = te.placeholder((n,), dt, name="r")
    i = te.reduce_axis((0, n), name="i")
    s_ = te.compute((m,), lambda j: te.sum(r[i] * A[i, j], axis=i), name="s")
    j = te.reduce_axis((0, m), name="j")
    q = te.compute((n,), lambda ii: te.sum(A[ii, j] * p[j], axis=j), name="q")
    return [("A", A), ("p", p), ("r", r)], [("s", s_), ("q", q)]


def mvt(te, s, dt):
    n = s["N"]
    x1 = te.placeholder((n,), dt, name="x1")
    x2 = te.placeholder((n,), dt, name="x2")
    y1 = te.placeholder((n,), dt, name="y_1")
    y2 = te.placeholder((n,), dt, name="y_2")
    A = te.placeholder((n, n), dt, name="A")
    j = te.reduce_axis((0, n), name="j")
    Ay = te.compute((n,), lambda i: te.sum(A[i, j] * y1[j], axis=j), name="Ay")
    j2 = te.reduce_axis((0, n), name="j2")
    ATy = te.compute((n,), lambda i: te.sum(A[j2, i] * y2[j2], axis=j2), name="ATy")
    x1o = te.compute((n,), lambda i: x1[i] + Ay[i], name="x1_out")
    x2o = te.compute((n,), lambda i: x2[i] + ATy[i], name="x2_out")
    return [("x1", x1), ("x2", x2), ("y_1", y1), ("y_2", y2), ("A", A)], \
        [("x1", x1o), ("x2", x2o)]


def gemver(te, s, dt):
    n = s["N"]
    alpha, beta = _scalar(te, "alpha", dt), _scalar(te, "beta", dt)
    A = te.placeholder((n, n), dt, name="A")
    u1, v1, u2, v2, w, x, y, z = (te.placeholder((n,), dt, name=nm) for nm in
                                  ("u1", "v1", "u2", "v2", "w", "x", "y", "z"))
    Ao = te.compute((n, n), lambda i, j: A[i, j] + u1[i] * v1[j] + u2[i] * v2[j], name="A_out")
    j = te.reduce_axis((0, n), name="j")
    ATy = te.compute((n,), lambda i: te.sum(beta[()] * Ao[j, i] * y[j], axis=j), name="ATy")
    xo = te.compute((n,), lambda i: x[i] + ATy[i] + z[i], name="x_out")
    j2 = te.reduce_axis((0, n), name="j2")
    Ax = te.compute((n,), lambda i: te.sum(alpha[()] * Ao[i, j2] * xo[j2], axis=j2), name="Ax")
    wo = te.compute((n,), lambda i: w[i] + Ax[i], name="w_out")
    return [("alpha", alpha), ("beta", beta), ("A", A), ("u1", u1), ("v1", v1), ("u2", u2),
            ("v2", v2), ("w", w), ("x", x), ("y", y), ("z", z)], \
        [("A", Ao), ("x", xo), ("w", wo)]


def gesummv(te, s, dt):
    n = s["N"]
    alpha, beta = _scalar(te, "alpha", dt), _scalar(te, "beta", dt)
    A = te.placeholder((n, n), dt, name="A")
    B = te.placeholder((n, n), dt, name="B")
    x = te.placeholder((n,), dt, name="x")
    j = te.reduce_axis((0, n), name="j")
    tmp = te.compute((n,), lambda i: te.sum(A[i, j] * x[j], axis=j), name="tmp")
    j2 = te.reduce_axis((0, n), name="j2")
    Bx = te.compute((n,), lambda i: te.sum(B[i, j2] * x[j2], axis=j2), name="Bx")
    y = te.compute((n,), lambda i: alpha[()] * tmp[i] + beta[()] * Bx[i], name="y")
    return [("alpha", alpha), ("beta", beta), ("A", A), ("B", B), ("x", x)], [("y", y)]


def doitgen(te, s, dt):
    nr, nq, np_ = s["NR"], s["NQ"], s["NP"]
    A = te.placeholder((nr, nq, np_), dt, name="A")
    C4 = te.placeholder((np_, np_), dt, name="C4")
    k = te.reduce_axis((0, np_), name="s")
    Ao = te.compute((nr, nq, np_), lambda r, q, p: te.sum(A[r, q, k] * C4[k, p], axis=k),
                    name="A_out")
    return [("A", A), ("C4", C4)], [("A", Ao)]


def batched_matmul(te, s, dt):
    nb, n, m, kk = s["BATCH"], s["N"], s["M"], s["K"]
    A = te.placeholder((nb, n, kk), dt, name="A")
    B = te.placeholder((nb, kk, m), dt, name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((nb, n, m), lambda b, i, j: te.sum(A[b, i, k] * B[b, k, j], axis=k), name="C")
    return [("A", A), ("B", B)], [("C", C)]


def conv1d(te, s, dt):
    n, c, l_, f, kw = s["N"], s["C"], s["L"], s["F"], s["K"]
    X = te.placeholder((n, c, l_ + kw - 1), dt, name="X")
    Wt = te.placeholder((f, c, kw), dt, name="Wt")
    rc, rk = te.reduce_axis((0, c), name="c"), te.reduce_axis((0, kw), name="k")
    Y = te.compute((n, f, l_), lambda n_, f_, l: te.sum(X[n_, rc, l + rk] * Wt[f_, rc, rk],
                                                        axis=[rc, rk]), name="Y")
    return [("X", X), ("Wt", Wt)], [("Y", Y)]


def dilated_conv2d(te, s, dt):
    n, c, h, w, f = s["N"], s["C"], s["H"], s["W"], s["F"]
    X = te.placeholder((n, c, h + 4, w + 4), dt, name="X")
    Wt = te.placeholder((f, c, 3, 3), dt, name="Wt")
    rc, rh, rw = (te.reduce_axis((0, e), name=nm) for e, nm in ((c, "c"), (3, "kh"), (3, "kw")))
    Y = te.compute((n, f, h, w), lambda n_, f_, h_, w_: te.sum(
        X[n_, rc, h_ + 2 * rh, w_ + 2 * rw] * Wt[f_, rc, rh, rw], axis=[rc, rh, rw]), name="Y")
    return [("X", X), ("Wt", Wt)], [("Y", Y)]


def linear_bias_gelu(te, s, dt):
    n, kk, m = s["N"], s["K"], s["M"]
    X = te.placeholder((n, kk), dt, name="X")
    Wt = te.placeholder((kk, m), dt, name="Wt")
    bias = te.placeholder((m,), dt, name="bias")
    k = te.reduce_axis((0, kk), name="k")
    XW = te.compute((n, m), lambda i, j: te.sum(X[i, k] * Wt[k, j], axis=k), name="XW")

    def gelu(i, j):
        h = XW[i, j] + bias[j]
        return 0.5 * h * (1 + te.tanh(GELU_C * (h + 0.044715 * h * h * h)))
    Y = te.compute((n, m), gelu, name="Y")
    return [("X", X), ("Wt", Wt), ("bias", bias)], [("Y", Y)]


TWINS = {f.__name__: f for f in (gemm, k2mm, k3mm, syrk, syr2k, atax, bicg, mvt, gemver, gesummv,
                                 doitgen, batched_matmul, conv1d, dilated_conv2d,
                                 linear_bias_gelu)}


# ---------------------------------------------------------------------------- running one

def suite_sizes(name: str, spec: str) -> dict:
    """The size values of a dataset name (MEDIUM, LARGE, test) or of a JSON object."""
    from dojo_core import suite
    entry = suite.info(name)
    if spec.lstrip().startswith("{"):
        return {k: int(v) for k, v in json.loads(spec).items()}
    return dict(entry.test_sizes if spec == "test" else entry.sizes[spec])


def draw_inputs(name: str, inputs, dtype: str, seed: int) -> dict:
    """Uniform random arrays for the twin's inputs, in each entry's input range."""
    import numpy as np
    from dojo_core import suite
    entry = suite.info(name)
    rng = np.random.default_rng(seed)
    out = {}
    for nm, t in inputs:
        lo, hi = entry.range_of(nm)
        out[nm] = rng.uniform(lo, hi, [int(d) for d in t.shape]).astype(DTYPES[dtype])
    return out


def max_error(got, ref, dtype: str) -> float:
    """Worst |got - ref| / (rtol |ref| + atol max|ref|), as dojo_core.harness.compare counts
    it (<= 1 passes; shape or non-finite mismatches are inf)."""
    import numpy as np
    rtol, atol = TOLERANCE[dtype]
    g, r = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if g.shape != r.shape or not np.all(np.isfinite(g)):
        return float("inf")
    if r.size == 0:
        return 0.0
    allowed = rtol * np.abs(r) + atol * (float(np.max(np.abs(r))) or 1.0)
    return float(np.max(np.abs(g - r) / allowed))


def run(args) -> dict:
    """Tune, run, check and time one twin (the module docstring's JSON object)."""
    tvm_common.set_threads(args.threads)
    import numpy as np
    import tvm
    from tvm import te
    from dojo_core import suite

    dt = DTYPES[args.dtype]
    sizes = suite_sizes(args.kernel, args.sizes)
    inputs, outputs = TWINS[args.kernel](te, sizes, dt)
    if args.inputs:
        with np.load(args.inputs) as z:
            values = {nm: np.asarray(z[nm], dtype=dt) for nm, _ in inputs}
    else:
        values = draw_inputs(args.kernel, inputs, args.dtype, args.seed)
    for nm, t in inputs:
        want = tuple(int(d) for d in t.shape)
        if values[nm].shape != want:
            raise ValueError(f"input {nm} has shape {values[nm].shape}, the twin wants {want}")
    target = tvm_common.host_target(args.threads)
    lib, tuning_s = tvm_common.tune([t for _, t in inputs] + [t for _, t in outputs], target,
                                    args.trials, args.threads, seed=args.seed)
    result = {"kernel": args.kernel, "dtype": args.dtype, "sizes": sizes, "trials": args.trials,
              "threads": args.threads, "tuning_s": tuning_s, "tvm": tvm.__version__,
              "target": str(target)}
    if lib is None:
        return dict(result, error="MetaSchedule found no valid schedule")
    outs = [np.zeros([int(d) for d in t.shape], dt) for _, t in outputs]
    dev_args = tvm_common.device_arrays([values[nm] for nm, _ in inputs] + outs)
    fn = lib["main"]
    fn(*dev_args)
    got = {nm: a.numpy() for (nm, _), a in zip(outputs, dev_args[len(inputs):])}
    if args.outputs:
        np.savez(args.outputs, **got)
    ref = suite.info(args.kernel).reference({k: np.array(v, np.float64) for k, v in values.items()},
                                             sizes)
    errors = {nm: max_error(got[nm], np.asarray(ref[nm]).astype(dt), args.dtype) for nm in got}
    rounds = [tvm_common.time_call(fn, dev_args, args.min_time) for _ in range(args.rounds)]
    return dict(result, median_s=statistics.median(r["median_s"] for r in rounds),
                min_s=min(r["min_s"] for r in rounds), rounds=[r["median_s"] for r in rounds],
                verified=all(e <= 1.0 for e in errors.values()),
                max_error=max(errors.values(), default=0.0), errors=errors)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=sorted(TWINS))
    ap.add_argument("--list", action="store_true",
                    help="print the kernels with a twin and whether tvm imports (JSON)")
    ap.add_argument("--dtype", default="f64", choices=sorted(DTYPES))
    ap.add_argument("--sizes", default="MEDIUM",
                    help="MEDIUM, LARGE, test or a JSON object of size values (MEDIUM)")
    ap.add_argument("--trials", type=int, default=100,
                    help="MetaSchedule's measured trials; 0: the default schedule, untuned")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--inputs", default=None, help="npz of the inputs by array name")
    ap.add_argument("--outputs", default=None, help="write the outputs here (npz)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.list:
        try:
            import tvm
            found = {"tvm": tvm.__version__, "error": None}
        except Exception as exc:                                      # noqa: BLE001
            found = {"tvm": None, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps({"twins": sorted(TWINS), "dtypes": sorted(DTYPES), **found}))
        return 0 if found["tvm"] else 1
    if not args.kernel:
        ap.error("--kernel is required (or --list)")
    try:
        result = run(args)
    except Exception as exc:                                          # noqa: BLE001
        result = {"kernel": args.kernel, "dtype": args.dtype,
                  "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result), flush=True)
    return 1 if result.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())

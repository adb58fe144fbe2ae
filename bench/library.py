"""The built library through its Python view against numpy and PyTorch (a benchmark, not a test).

    python bench/library.py [--dir DIR] [--populate] [--threads 1,2] [--rounds 3]
                            [--min-time 0.15] [--kernels a,b] [--no-torch] [--out results.json]

Without ``--dir`` it builds the library of this machine (``library build --target local``
from the default record store, into ``var/bench-library``), runs ``make`` and the C test
program (``make check``), then, for every exported function at the library's sizes, times
in one run:

  view    the function through ``dojo_core.library.load(DIR)`` (numpy arrays in, outputs
          preallocated and passed by name; OpenMP threads set with ``set_threads``)
  numpy   the same computation written with numpy (``bench/libraries.py``'s expressions for
          matmul, bmm, softmax, layernorm, conv2d, attention; the others below), float32
  torch   PyTorch CPU if installed (skipped cleanly when absent)

numpy and PyTorch run in child processes per thread count, exactly as ``bench/libraries.py``
runs them (its worker, ``bench/libraries_worker.py``, reused here with the extra kernels: ``OPENBLAS_CORETYPE`` and
``OPENBLAS_L2_SIZE`` removed from their environment, thread counts set by environment and
threadpoolctl); each child checks its outputs against the library's once (harness
tolerance), and the library's outputs are checked against the numpy references
(``dojo_core.kernels.reference``).  Each figure is the median over ``--rounds`` rounds of
the median of one measurement (at least ``--min-time`` s and 3 repetitions after a warm-up);
contenders run back to back in every round.  Ratios: numpy time / view time and torch time /
view time (above 1: the library is faster).

``--populate`` first records this machine's entries with ``python -m dojo_core bench
--record``: the ``.steps`` schedules of matmul, bmm, softmax, layernorm, conv2d and
attention (the target-specific ones where they exist) and every untransformed kernel, at
their default sizes.  A function whose outputs differ from the numpy reference is left out
of the library (the builder checks every candidate here; see its ``excluded`` list).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np                                                        # noqa: E402

import bench.libraries_worker as libraries_worker                         # noqa: E402
from bench import peer_kernels                                            # noqa: E402
from bench.common import cpu_model, load_text, usable_cores               # noqa: E402
from bench.peers import PAUSE_S, UNSET, time_fn                           # noqa: E402
from dojo_core import harness, kernels                                    # noqa: E402
from dojo_core.codegen.targets import detect_host_target                  # noqa: E402
from dojo_core.kernels import kernel_path, list_kernels, steps_path       # noqa: E402
from dojo_core.library import build_library, load                         # noqa: E402
from dojo_core.records import RecordStore, machine_fingerprint            # noqa: E402

SCHEDULED = ("matmul", "bmm", "softmax", "layernorm", "conv2d", "attention")


# =============================================================================== numpy / torch

def numpy_fn(np, name, x, sizes):
    """bench/libraries.py's numpy expression of a kernel, or one written here."""
    try:
        return peer_kernels.numpy_fn(np, name, x, sizes)
    except KeyError:
        pass
    out = {}

    def empty_like_ref(shape):
        return np.empty(shape, np.float32)

    if name in ("add", "relu", "silu", "gelu", "log_softmax", "rmsnorm"):
        X = x.get("X", x.get("A"))
        Y = out.setdefault("C" if name == "add" else "Y", empty_like_ref(X.shape))
        if name == "add":
            return (lambda: np.add(x["A"], x["B"], out=Y)), out
        if name == "relu":
            return (lambda: np.maximum(X, np.float32(0), out=Y)), out
        if name == "silu":
            def f():
                np.negative(X, out=Y); np.exp(Y, out=Y); np.add(Y, np.float32(1), out=Y); np.divide(X, Y, out=Y)
            return f, out
        if name == "gelu":
            try:                                      # optional: scipy's erf when installed
                from scipy.special import erf
            except ImportError:                       # numpy has no erf: the reference's
                from dojo_core.kernels.references import erf
            c = np.float32(1 / np.sqrt(2))

            def f():
                np.multiply(X, c, out=Y); Y[...] = erf(Y); np.add(Y, np.float32(1), out=Y); np.multiply(Y, X, out=Y)
                np.multiply(Y, np.float32(0.5), out=Y)
            return f, out
        if name == "log_softmax":
            def f():
                np.subtract(X, X.max(axis=1, keepdims=True), out=Y)
                np.subtract(Y, np.log(np.exp(Y).sum(axis=1, keepdims=True)), out=Y)
            return f, out
        eps, g = np.float32(x["eps"]), x["gamma"]

        def f():                                      # rmsnorm
            inv = 1 / np.sqrt(np.mean(X * X, axis=1, keepdims=True) + eps)
            np.multiply(X, inv, out=Y); np.multiply(Y, g, out=Y)
        return f, out
    if name == "axpy":
        a, xs, y = np.float32(x["alpha"]), x["x"], x["y"]
        tmp = np.empty_like(xs)
        out["y"] = y

        def f():
            np.multiply(xs, a, out=tmp); np.add(y, tmp, out=y)
        return f, out
    if name in ("gemv", "matmul_nt", "linear_relu"):
        if name == "gemv":
            y = out["y"] = np.empty(x["A"].shape[0], np.float32)
            return (lambda: np.matmul(x["A"], x["x"], out=y)), out
        if name == "matmul_nt":
            C = out["C"] = np.empty((x["A"].shape[0], x["B"].shape[0]), np.float32)
            return (lambda: np.matmul(x["A"], x["B"].T, out=C)), out
        Y = out["Y"] = np.empty((x["X"].shape[0], x["W"].shape[1]), np.float32)

        def f():
            np.matmul(x["X"], x["W"], out=Y); np.add(Y, x["bias"], out=Y); np.maximum(Y, np.float32(0), out=Y)
        return f, out
    if name == "row_sum":
        y = out["y"] = np.empty(x["X"].shape[0], np.float32)
        return (lambda: np.sum(x["X"], axis=1, out=y)), out
    if name == "sum_squares":
        s = out["s"] = np.zeros((), np.float32)

        def f():
            s[...] = np.dot(x["x"], x["x"])
        return f, out
    if name == "transpose":
        B = out["B"] = np.empty(x["A"].shape[::-1], np.float32)
        return (lambda: np.copyto(B, x["A"].T)), out
    if name == "batchnorm":
        X = x["X"]
        Y = out["Y"] = np.empty_like(X)

        def f():
            scale = x["gamma"] / np.sqrt(x["var"] + np.float32(x["eps"]))
            shift = x["beta"] - x["mean"] * scale
            np.multiply(X, scale[:, None, None], out=Y); np.add(Y, shift[:, None, None], out=Y)
        return f, out
    if name in ("avgpool2d", "maxpool2d"):
        n, c, h, w = sizes["N"], sizes["C"], sizes["H"], sizes["W"]
        Y = out["Y"] = np.empty((n, c, h, w), np.float32)
        windows = x["X"].reshape(n, c, h, 2, w, 2)
        if name == "maxpool2d":
            return (lambda: np.max(windows, axis=(3, 5), out=Y)), out
        return (lambda: np.mean(windows, axis=(3, 5), out=Y)), out
    if name == "depthwise_conv2d":
        X, Wt = x["X"], x["Wt"]
        n, c, h, w = X.shape[0], X.shape[1], X.shape[2] - 2, X.shape[3] - 2
        Y = out["Y"] = np.empty((n, c, h, w), np.float32)
        tmp = np.empty_like(Y)

        def f():
            Y[...] = 0
            for i in range(3):
                for j in range(3):
                    np.multiply(X[:, :, i:i + h, j:j + w], Wt[None, :, i, j, None, None], out=tmp)
                    np.add(Y, tmp, out=Y)
        return f, out
    raise KeyError(name)


def torch_fn(torch, name, x, sizes):
    """bench/libraries.py's PyTorch call of a kernel, or one written here."""
    try:
        return peer_kernels.torch_fn(torch, name, x, sizes)
    except KeyError:
        pass
    t = {k: torch.from_numpy(v) if getattr(v, "ndim", 0) else v for k, v in x.items()}
    F, out = torch.nn.functional, {}
    calls = {
        "add": lambda: {"C": torch.add(t["A"], t["B"])},
        "relu": lambda: {"Y": torch.relu(t["X"])},
        "silu": lambda: {"Y": F.silu(t["X"])},
        "gelu": lambda: {"Y": F.gelu(t["X"])},
        "axpy": lambda: {"y": t["y"].add_(t["x"], alpha=float(x["alpha"]))},
        "gemv": lambda: {"y": torch.mv(t["A"], t["x"])},
        "matmul_nt": lambda: {"C": torch.matmul(t["A"], t["B"].T)},
        "linear_relu": lambda: {"Y": torch.relu(torch.addmm(t["bias"], t["X"], t["W"]))},
        "log_softmax": lambda: {"Y": torch.log_softmax(t["X"], dim=1)},
        "rmsnorm": lambda: {"Y": F.rms_norm(t["X"], (t["X"].shape[1],), t["gamma"], float(x["eps"]))},
        "row_sum": lambda: {"y": t["X"].sum(dim=1)},
        "sum_squares": lambda: {"s": torch.dot(t["x"], t["x"])},
        "transpose": lambda: {"B": t["A"].T.contiguous()},
        "batchnorm": lambda: {"Y": F.batch_norm(t["X"], t["mean"], t["var"], t["gamma"], t["beta"],
                                                False, 0.0, float(x["eps"]))},
        "avgpool2d": lambda: {"Y": F.avg_pool2d(t["X"], 2)},
        "maxpool2d": lambda: {"Y": F.max_pool2d(t["X"], 2)},
        "depthwise_conv2d": lambda: {"Y": F.conv2d(t["X"], t["Wt"][:, None], groups=t["Wt"].shape[0])},
    }
    if name not in calls:
        raise KeyError(name)
    return (lambda: out.update(calls[name]())), out


class Worker(libraries_worker.Worker):
    """bench/libraries.py's numpy/torch child process, started through this script so that
    it knows the extra kernels."""

    def __init__(self, threads: int, use_torch: bool):
        super().__init__(threads, use_torch, script=Path(__file__).resolve())


def worker_main(threads: int, use_torch: bool) -> None:
    libraries_worker.worker_main(threads, use_torch, numpy_fn, torch_fn)


# =============================================================================== main side

def populate() -> None:
    """This machine's entries (see the module docstring), appended to the default store."""
    target = detect_host_target()
    runs = [(k, steps_path(k, target)) for k in SCHEDULED] + [(k, None) for k in list_kernels()]
    for kernel, steps in runs:
        cmd = [sys.executable, "-m", "dojo_core", "bench", str(kernel_path(kernel)), "--min-time", "0.3",
               "--record"]
        if steps is not None:
            cmd[4:4] = ["--steps", str(steps)]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        line = json.loads(r.stdout) if r.stdout.strip() else {}
        print(f"recorded {kernel:17s} {'steps ' + steps.name if steps else 'untransformed':28s} "
              f"{line.get('median_s', float('nan')) * 1e3:9.3f} ms  verified={line.get('verified')}"
              + (f"  ({r.stderr.strip()})" if r.returncode else ""))


def build(directory: Path) -> None:
    t0 = time.perf_counter()
    manifest = build_library(directory, "local", list(RecordStore()), replay=False)
    for gone in manifest.get("excluded", []):
        print(f"left out {gone['kernel']} {gone['sizes']}: {gone['reason']}")
    jobs = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2)
    subprocess.run(["make", "-s", "-j", jobs], cwd=directory, check=True)
    print(f"built {directory} in {time.perf_counter() - t0:.1f} s (library build + make)")


def c_tests(directory: Path) -> bool:
    r = subprocess.run(["./perfdojo_test"], cwd=directory, capture_output=True, text=True)
    last = r.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"C test program: {last[0]} (exit {r.returncode})")
    for line in r.stdout.splitlines():
        if line.startswith("FAIL"):
            print("  " + line)
    return r.returncode == 0


def prepare_view(lib, entry):
    program = kernels.load_kernel(entry["kernel"], entry["sizes"])
    fn = lib.functions[entry["name"]]
    x = kernels.random_inputs(program, 0)
    ours = fn(**{k: v.copy() for k, v in x.items()})
    ours = ours if isinstance(ours, tuple) else (ours,)
    names = [a["name"] for a in fn.outputs]
    got = dict(zip(names, (np.asarray(o) for o in ours)))
    ref = kernels.reference(entry["kernel"], x, program=program)
    worst = max(harness.compare(got, ref, program).values(), default=0.0)
    outs = {a["name"]: harness.aligned_empty(a["shape"], np.float32) for a in fn.outputs if a["kind"] == "out"}
    return program, (lambda: fn(**x, **outs)), got, worst


def fmt_ms(v):
    return "-".rjust(9) if v is None else f"{v * 1e3:9.3f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="an already built library (default: build var/bench-library)")
    ap.add_argument("--populate", action="store_true", help="record this machine's entries first")
    ap.add_argument("--threads", default=None, help="comma-separated thread counts (default 1 and all)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.15)
    ap.add_argument("--kernels", default=None, help="only these kernels (comma-separated)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--out", help="write the results as JSON")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        worker_main(args.worker, not args.no_torch)
        return 0

    ncpu = usable_cores()
    threads = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, ncpu or 1})
    print(f"PerfDojo library vs numpy and PyTorch -- {cpu_model()}, {ncpu} cores, "
          f"fingerprint {machine_fingerprint()}")
    load_start = os.getloadavg()
    print(f"load average at start: {load_text(load_start)}")
    if args.populate:
        populate()
    directory = Path(args.dir) if args.dir else ROOT / "var" / "bench-library"
    if not args.dir:
        build(directory)
    c_ok = c_tests(directory)
    lib = load(directory)
    entries = [e for e in lib.manifest["functions"]
               if not args.kernels or e["kernel"] in args.kernels.split(",")]
    workers = {t: Worker(t, not args.no_torch) for t in threads}
    hello = workers[threads[0]].hello
    print(f"numpy {hello['numpy']}, torch {hello['torch'] or hello['torch_error']}; removed from their "
          f"environment: {', '.join(UNSET)}")
    results = []
    try:
        for entry in entries:
            program, view, got, worst = prepare_view(lib, entry)
            msg = {"kernel": entry["kernel"], "sizes": entry["sizes"], "case": entry["name"]}
            for t in threads:
                w = workers[t]
                checks = {}
                for name in ("numpy", "torch"):
                    answer = w.call(op="check", lib=name, expected=got, **msg)
                    checks[name] = (max(answer["errors"].values(), default=0.0) if answer["ok"]
                                    else answer["error"])
                times = {"view": [], "numpy": [], "torch": []}
                for _ in range(args.rounds):
                    lib.set_threads(t)
                    times["view"].append(time_fn(view, args.min_time)["median_s"])
                    time.sleep(PAUSE_S)
                    for name in ("numpy", "torch"):
                        if isinstance(checks[name], float):
                            answer = w.call(op="time", lib=name, min_time=args.min_time, **msg)
                            if answer["ok"]:
                                times[name].append(answer["median_s"])
                        time.sleep(PAUSE_S)
                med = {k: statistics.median(v) if v else None for k, v in times.items()}
                row = {"function": entry["name"], "kernel": entry["kernel"], "sizes": entry["sizes"],
                       "tuned": entry["tuned"], "steps": entry["steps"], "threads": t,
                       "view_s": med["view"], "numpy_s": med["numpy"], "torch_s": med["torch"],
                       "np_over_view": med["numpy"] / med["view"] if med["numpy"] else None,
                       "pt_over_view": med["torch"] / med["view"] if med["torch"] else None,
                       "reference_error": worst, "checks": checks}
                results.append(row)
                print_row(row, header=len(results) == 1)
    finally:
        for w in workers.values():
            w.close()
    load_end = os.getloadavg()
    print(f"load average at end: {load_text(load_end)}")
    if args.out:
        Path(args.out).write_text(json.dumps({"c_tests_passed": c_ok, "threads": threads,
                                              "results": results, "hello": hello}, indent=1, default=str))
    return 0 if c_ok else 1


def print_row(r, header=False):
    if header:
        head = (f"{'function':34s} {'kind':>9s} {'thr':>3s} {'view ms':>9s} {'numpy ms':>9s} "
                f"{'torch ms':>9s} {'np/view':>7s} {'pt/view':>7s}  check")
        print(head)
        print("-" * len(head))

    def ratio(v):
        return "-".rjust(7) if v is None else f"{v:7.2f}"

    ok = "ok" if r["reference_error"] <= 1 else f"REF {r['reference_error']:.3g}"
    others = " ".join(f"{k}:{v:.2g}" if isinstance(v, float) else f"{k}:-" for k, v in r["checks"].items())
    kind = f"{r['steps']} steps" if r["tuned"] else "naive"
    print(f"{r['function']:34s} {kind:>9s} {r['threads']:3d} {fmt_ms(r['view_s'])} {fmt_ms(r['numpy_s'])} "
          f"{fmt_ms(r['torch_s'])} {ratio(r['np_over_view'])} {ratio(r['pt_over_view'])}  {ok}; {others}",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())

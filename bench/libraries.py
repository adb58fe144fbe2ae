"""PerfDojo's scheduled kernels against the libraries, in one run (a benchmark, not a test).

    python bench/libraries.py [--out results.json] [--rounds 5] [--min-time 0.15]
                              [--threads 1,2] [--cases matmul512,softmax,...] [--no-torch]
                              [--target x86-avx512,x86-avx2]

For each case -- matmul 512^3 and 1024^3, bmm (16 x 256^3), softmax 4096 x 1024, layernorm
4096 x 1024, conv2d (1 x 64 x 56 x 56, 64 filters 3 x 3, padding 1: the library kernel's
default sizes, input already padded) and attention (S = 512, D = 64) -- it measures, at one
thread and at all threads:

  naive   the untransformed library kernel, compiled C (sequential: it has no parallel
          loop, so it is timed once, at one thread, and shown in both rows)
  steps   the kernel after its ``dojo_core/kernels/NAME.steps`` schedule, or
          ``NAME.TARGET.steps`` where one exists for the target (the same file at matmul
          1024^3), compiled C, OpenMP threads set by the harness; its outputs are verified
          against the untransformed kernel (compiled C at these sizes). The target is this
          machine's, or each of ``--target`` in turn (``x86-avx512,x86-avx2`` on an AVX-512
          machine: the AVX2 target's flags turn AVX-512 off, so its code is AVX2 code); the
          table's ``isa`` column names it
  numpy   matmul/bmm via ``np.matmul`` (OpenBLAS), softmax and layernorm as numpy
          expressions (in place where numpy allows), conv2d as im2col + ``@``, attention as
          ``Q @ K.T``, softmax, ``@ V``
  torch   PyTorch CPU if installed (``torch.matmul``, ``torch.bmm``, ``torch.softmax``,
          ``F.layer_norm``, ``F.conv2d`` (oneDNN), ``F.scaled_dot_product_attention``);
          skipped cleanly when absent. Those without an ``out=`` form allocate their output
          at every call, as a user's call does; the previous result is released first, so
          that the allocator hands the same block back (kept alive, a 16 MiB result is
          mapped afresh at every call and pays a page fault per 4 KiB)

numpy and PyTorch run in child processes, one per thread count, whose environment (theirs
alone) has ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` removed (set on some of these
machines, they make OpenBLAS take a slower kernel) and ``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to the thread count; threadpoolctl (when
installed: ``pip install .[bench]``) limits the pools as well and names the BLAS kernel in use
(``architecture``), which the table header prints. For a target narrower than the host the
children also get that width (``bench/peers.X86_LIBRARY_ISAS``: OpenBLAS's kernel, PyTorch's
ATen capability, oneDNN's and MKL's ISA), so AVX2 code is compared with the libraries' AVX2
code. The children check their outputs against the scheduled kernel's outputs (harness
tolerance) once per case.

Figures: GFLOP/s from the catalog's ``flops`` (GB/s from its ``bytes``, the minimal traffic,
for softmax and layernorm), each the median over ``--rounds`` rounds of the median of one
measurement (at least ``--min-time`` seconds and 3 repetitions after a warm-up); in every
round the contenders run back to back (with a short pause so that spinning worker threads of
the previous one go to sleep), so that the load of a shared machine falls on all of them
alike. Ratios are steps / numpy and steps / torch. A second table gives the same figures
from each contender's best repetition, which another process on the machine disturbs least.
The machine's peak is measured in the same run: an FMA microbenchmark (independent chains of
vector FMAs at each target's vector width, compiled by the harness's compiler with the
target's flags; the best of many ~2 ms runs, since a peak is a capability) and a copy
microbenchmark (C, OpenMP; GB/s counting the bytes read and written, best of several, and at
t threads never less than at fewer threads), of a 64 MiB buffer and of a buffer of each GB/s
case's footprint (half its bytes: softmax copies 16 MiB); ``%pk`` is the figure as a fraction
of the FMA peak (GFLOP/s) or of the copy of the same footprint (GB/s) at the same thread count
(a copy that fits in a large L3 runs twice as fast as one that does not).
The load average is printed at the start and the end: these machines are shared, and a
second thread is worth little while another process holds a core.

The JSON written to ``--out`` holds everything printed, plus min times, the machine, the
compiler and flags, and the threadpoolctl report.

This script owns the cases, the rounds and the tables; the child processes are
``libraries_worker.py`` (over ``peers.py``), the numpy/PyTorch versions of the kernels
``peer_kernels.py``, the peaks ``machine_peaks.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_model, fixed, load_text, ratio, usable_cores  # noqa: E402
from bench.libraries_worker import Worker, worker_main                      # noqa: E402
from bench.machine_peaks import (copy_bandwidth, fma_iters, fma_peak,       # noqa: E402
                                 load_peaks_lib)
from bench.peers import PAUSE_S, UNSET, blas_env                            # noqa: E402
from dojo_core import harness                                               # noqa: E402
from dojo_core.codegen import get_target                                    # noqa: E402
from dojo_core.kernels import info, load_kernel, random_inputs, steps_path  # noqa: E402
from dojo_core.steps import read_steps, replay                              # noqa: E402

# name, library kernel, sizes (None: default), unit
CASES = [
    ("matmul512", "matmul", None, "GFLOP/s"),
    ("matmul1024", "matmul", {"N": 1024, "M": 1024, "K": 1024}, "GFLOP/s"),
    ("bmm", "bmm", None, "GFLOP/s"),
    ("softmax", "softmax", None, "GB/s"),
    ("layernorm", "layernorm", None, "GB/s"),
    ("conv2d", "conv2d", None, "GFLOP/s"),
    ("attention", "attention", None, "GFLOP/s"),
]


# =============================================================================== main side

def fmt_ratio(v, width=6):
    return fixed(v, width, 2)


def fmt_pct(v, width=5):
    return "-".rjust(width) if v is None else f"{100 * v:{width}.0f}%"


def print_table(results, key: str) -> None:
    """One table of the results, figures from the times under ``key`` (median_s, min_s)."""
    head = (f"{'case':10s} {'isa':>7s} {'thr':>3s} {'unit':>7s} {'naive':>7s} {'steps':>7s} "
            f"{'numpy':>7s} "
            f"{'torch':>7s} {'st/np':>6s} {'st/pt':>6s} {'st%pk':>6s} {'np%pk':>6s} "
            f"{'pt%pk':>6s}  check")
    print(head)
    print("-" * len(head))
    for r in results:
        v = {w: (r["work"] / r[w][key] / 1e9 if r.get(w) else None)
             for w in ("naive", "steps", "numpy", "torch")}
        pk = r["peak"]
        ok = "ok" if r["verified"] else f"FAILED ({r['max_error']:.3g})"
        libs = " ".join(f"{k}:{e:.2g}" if isinstance(e, float) else f"{k}:{e}"
                        for k, e in r["library_errors"].items())
        isa = r["target"].replace("x86-", "")[:7]
        print(f"{r['case']:10s} {isa:>7s} {r['threads']:3d} {r['unit']:>7s} {fixed(v['naive'])} "
              f"{fixed(v['steps'])} {fixed(v['numpy'])} {fixed(v['torch'])} "
              f"{fmt_ratio(ratio(v['steps'], v['numpy']))} "
              f"{fmt_ratio(ratio(v['steps'], v['torch']))} "
              f"{fmt_pct(ratio(v['steps'], pk))} {fmt_pct(ratio(v['numpy'], pk))} "
              f"{fmt_pct(ratio(v['torch'], pk))}  {ok}; {libs}")


def copy_buffer_bytes(work_bytes: int) -> int:
    """The buffer of the copy that moves a memory-bound case's bytes: half of them read,
    half written (softmax: X and Y), rounded to whole MiB."""
    return max(1, round(work_bytes / 2 / (1 << 20))) << 20


def copies(lib, buffer_sizes, threads) -> dict:
    """Copy bandwidth (``copy_bandwidth``) of each buffer size at each thread count, by
    buffer bytes; each entry's ``peak`` is the best at that many threads or fewer (t threads
    can always do what fewer did: a loaded core)."""
    out = {}
    for size in sorted(set(buffer_sizes)):
        at = {t: copy_bandwidth(lib, t, buffer_bytes=size) for t in threads}
        for t in threads:
            at[t]["peak"] = max(at[u]["best"] for u in threads if u <= t)
        out[size] = at
    return out


def same_footprint_copies(lib, cases, threads) -> dict:
    """``copies`` at the footprint of each GB/s case: whether the arrays fit in a cache
    decides what a copy reaches (on a Xeon with a large L3: 28 GB/s at 16 MiB, 13 at 64 MiB,
    one thread), so a kernel is compared with a copy of the same bytes."""
    return copies(lib, [copy_buffer_bytes(info(kname).bytes(load_kernel(kname, sz).size_values))
                        for _, kname, sz, unit in cases if unit == "GB/s"], threads)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", metavar="FILE", help="write the results as JSON to FILE")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of every contender (5)")
    ap.add_argument("--min-time", type=float, default=0.15,
                    help="seconds of repetitions per measurement (0.15)")
    ap.add_argument("--threads", default=None,
                    help="comma-separated thread counts (default: 1 and all cores)")
    ap.add_argument("--cases", default=None,
                    help="comma-separated subset of: " + ", ".join(c[0] for c in CASES))
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    ap.add_argument("--target", default=None,
                    help="comma-separated targets of the scheduled kernels and FMA peaks "
                         "(default: this machine's; x86-avx512,x86-avx2 on an AVX-512 machine "
                         "measures both ISAs' code in one run)")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker is not None:
        worker_main(args.worker, not args.no_torch)
        return 0

    started = time.perf_counter()
    ncpu = usable_cores()
    threads = ([int(t) for t in args.threads.split(",")] if args.threads
               else sorted({1, ncpu or 1}))
    cases = CASES
    if args.cases:
        wanted = args.cases.split(",")
        unknown = [c for c in wanted if c not in {x[0] for x in CASES}]
        if unknown:
            ap.error(f"unknown case(s): {', '.join(unknown)}")
        cases = [c for c in CASES if c[0] in wanted]
    targets = [get_target(n) for n in args.target.split(",")] if args.target \
        else [get_target(None)]
    target = targets[0]
    load_start = os.getloadavg()
    print(f"PerfDojo vs libraries -- {cpu_model()}, {ncpu} cores, target(s) "
          f"{', '.join(t.name for t in targets)} (last-level cache {target.cache_bytes >> 20} MiB)")
    print(f"load average at start: {load_text(load_start)}")
    print(f"removed from the numpy/torch children's environment: {', '.join(UNSET)} "
          f"(set here: {', '.join(k for k in UNSET if k in os.environ) or 'none'})")

    # ---------------------------------------------------------------- peaks
    fmas = {}                # target name -> thread count -> FMA peak at its vector width
    for tg in targets:
        peaks_lib = load_peaks_lib(tg)
        iters = fma_iters(peaks_lib)
        fmas[tg.name] = {t: fma_peak(peaks_lib, t, iters) for t in threads}
    copy = copies(peaks_lib, [64 << 20], threads)[64 << 20]
    copy_at = same_footprint_copies(peaks_lib, cases, threads)
    for t in threads:
        fma_text = "; ".join(f"FMA {tg} {f[t]['best']:.1f} GFLOP/s (median of runs "
                             f"{f[t]['median']:.1f})" for tg, f in fmas.items())
        at_text = "".join(f"; copy {size >> 20} MiB {c[t]['best']:.1f} (median "
                          f"{c[t]['median']:.1f}; peak used: {c[t]['peak']:.1f})"
                          for size, c in sorted(copy_at.items()))
        print(f"peak, {t} thread(s): {fma_text}; copy 64 MiB {copy[t]['best']:.1f} GB/s "
              f"(median {copy[t]['median']:.1f}; peak used: {copy[t]['peak']:.1f}){at_text}")

    # ---------------------------------------------------------------- workers
    host = get_target(None)
    envs = {tg.name: blas_env(tg, host) for tg in targets}
    blas = {}                # environment (as a sorted tuple) -> thread count -> Worker
    for env in envs.values():
        key = tuple(sorted(env.items()))
        if key not in blas:
            blas[key] = {t: Worker(t, not args.no_torch, env_extra=env) for t in threads}
    workers_of = {name: blas[tuple(sorted(env.items()))] for name, env in envs.items()}
    workers = workers_of[targets[0].name]
    for name, env in envs.items():
        if env:
            print(f"numpy and torch for {name}: {' '.join(f'{k}={v}' for k, v in env.items())}")
    for name in envs:
        isa = workers_of[name][threads[0]].hello.get("torch_isa")
        if isa:
            print(f"torch's CPU code for {name}: {isa}")
    hello = workers[threads[0]].hello
    print(f"numpy {hello['numpy']}, torch {hello['torch'] or hello['torch_error']}")
    if hello["threadpoolctl_error"]:
        print(f"threadpoolctl: {hello['threadpoolctl_error']}")
    for t in threads:
        for pool in workers[t].hello["threadpoolctl"]:
            print(f"  threadpoolctl ({t} thr): {pool.get('internal_api')} "
                  f"{pool.get('version')} kernel={pool.get('architecture', '-')} "
                  f"threads={pool.get('num_threads')} {Path(pool.get('filepath', '')).name}")
    have_torch = hello["torch"] is not None

    results = []
    try:
        for target, (case, kname, sizes, unit) in ((tg, c) for tg in targets for c in cases):
            fma = fmas[target.name]
            workers = workers_of[target.name]
            entry = info(kname)
            ref = load_kernel(kname, sizes)
            spath = steps_path(kname, target)     # NAME.TARGET.steps where one exists
            prog = replay(ref, read_steps(spath), str(spath))
            inputs = random_inputs(ref, 0)
            lib_ref = harness.build(ref, target)
            lib_steps = harness.build(prog, target)
            outputs = harness.run_c(prog, inputs, target=target, library=lib_steps)
            check = harness.verify(prog, ref, inputs, target=target, reference="c",
                                   outputs=outputs)
            s = prog.size_values
            work = entry.bytes(s) if unit == "GB/s" else entry.flops(s)
            lib_checks = {}
            for lib in ["numpy"] + (["torch"] if have_torch else []):
                r = workers[threads[0]].call(op="check", case=case, lib=lib, kernel=kname,
                                             sizes=sizes, expected=outputs)
                lib_checks[lib] = (max(r["errors"].values()) if r["ok"] else r["error"])
            naive = harness.measure(ref, inputs, min_time=args.min_time, min_reps=3,
                                    threads=1, library=lib_ref, timeout=600)
            row_common = {
                "case": case, "target": target.name, "kernel": kname, "sizes": s, "unit": unit,
                "work": work, "steps": str(spath.relative_to(ROOT)),
                "verified": check["verified"], "verified_against": check["reference"],
                "max_error": max(check["errors"].values(), default=0.0),
                "library_errors": lib_checks,
                "naive": {"median_s": naive["median_s"], "min_s": naive["min_s"],
                          "value": work / naive["median_s"] / 1e9},
            }
            for t in threads:
                per = {"steps": [], "numpy": [], "torch": []}
                errors = {}
                for _ in range(args.rounds):
                    m = harness.measure(prog, inputs, min_time=args.min_time, threads=t,
                                        library=lib_steps, timeout=600)
                    per["steps"].append((m["median_s"], m["min_s"]))
                    time.sleep(PAUSE_S)
                    for lib in ["numpy"] + (["torch"] if have_torch else []):
                        r = workers[t].call(op="time", case=case, lib=lib, kernel=kname,
                                            sizes=sizes, min_time=args.min_time)
                        if r["ok"]:
                            per[lib].append((r["median_s"], r["min_s"]))
                        else:
                            errors[lib] = r["error"]
                        time.sleep(PAUSE_S)
                row = dict(row_common, threads=t, errors=errors)
                for who, vals in per.items():
                    if vals:
                        med = statistics.median(v[0] for v in vals)
                        row[who] = {"median_s": med, "min_s": min(v[1] for v in vals),
                                    "rounds": [v[0] for v in vals],
                                    "value": work / med / 1e9}
                    else:
                        row[who] = None
                peak = (fma[t]["best"] if unit == "GFLOP/s"
                        else copy_at[copy_buffer_bytes(work)][t]["peak"])
                val = {w: (row[w]["value"] if row.get(w) else None)
                       for w in ("naive", "steps", "numpy", "torch")}
                row["steps_vs_numpy"] = val["steps"] / val["numpy"] if val["numpy"] else None
                row["steps_vs_torch"] = val["steps"] / val["torch"] if val["torch"] else None
                row["peak"] = peak
                best = {w: (work / row[w]["min_s"] / 1e9 if row.get(w) else None)
                        for w in ("naive", "steps", "numpy", "torch")}
                row["best"] = {
                    "value": best,
                    "steps_vs_numpy": best["steps"] / best["numpy"] if best["numpy"] else None,
                    "steps_vs_torch": best["steps"] / best["torch"] if best["torch"] else None,
                    "fraction_of_peak": {w: (v / peak if v else None) for w, v in best.items()}}
                row["fraction_of_peak"] = {w: (v / peak if v else None) for w, v in val.items()}
                results.append(row)
                print(f"  measured {case} ({target.name}) at {t} thread(s)", file=sys.stderr)
    finally:
        for per_thread in blas.values():
            for w in per_thread.values():
                w.close()

    # ---------------------------------------------------------------- table
    load_end = os.getloadavg()
    for title, key in (("median of rounds (each the median of its repetitions)", "median_s"),
                       ("best repetition (least disturbed by other load)", "min_s")):
        print()
        print(f"== {title}")
        print_table(results, key)
    print()
    print("naive: untransformed kernel (sequential, timed at 1 thread); steps: NAME.steps; "
          "st/np, st/pt: steps / numpy, steps / torch;")
    print("%pk: of the measured FMA peak (GFLOP/s rows) or same-footprint copy bandwidth (GB/s rows) "
          "at that thread count (best runs); check: steps vs untransformed")
    print("(ok = within tolerance), library outputs vs steps outputs as worst error / "
          "tolerance (<= 1 agrees).")
    print(f"load average at start: {load_text(load_start)}; at end: {load_text(load_end)}; "
          f"total {time.perf_counter() - started:.0f} s")

    if args.out:
        doc = {
            "machine": {"cpu": cpu_model(), "cores": ncpu, "platform": platform.platform(),
                        "target": target.name, "cache_bytes": target.cache_bytes,
                        "targets": {tg.name: {"cflags": list(tg.cflags),
                                              "ldflags": list(tg.ldflags)} for tg in targets},
                        "cflags": list(target.cflags),
                        "ldflags": list(target.ldflags)},
            "compiler": lib_steps.compiled.compiler if results else None,
            "load_average": {"start": list(load_start), "end": list(load_end)},
            "env_unset_for_libraries": list(UNSET),
            "env_set_here": {k: os.environ[k] for k in UNSET if k in os.environ},
            "peaks": {"fma_gflops": {str(t): fmas[targets[0].name][t] for t in threads},
                      "fma_gflops_by_target": {n: {str(t): f[t] for t in threads}
                                               for n, f in fmas.items()},
                      "copy_gbs": {str(t): copy[t] for t in threads},
                      "copy_gbs_at_footprint": {str(size): {str(t): c[t] for t in threads}
                                                for size, c in copy_at.items()}},
            "libraries": {str(t): workers_of[targets[0].name][t].hello for t in threads},
            "libraries_env": envs,
            "rounds": args.rounds, "min_time": args.min_time,
            "results": results,
            "seconds": time.perf_counter() - started,
        }
        Path(args.out).write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {args.out}")
    return 0 if all(r["verified"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The agents on the benchmark suite against their peers, in one run (a benchmark, not a
test).

    python bench/suite.py [--kernels gemm,atax,... | --group polybench|ml] [--dtypes f64,f32]
                          [--dataset MEDIUM|LARGE|test] [--threads 1,all] [--agents greedy,mcts]
                          [--budget 100] [--rounds 3] [--min-time 0.1] [--search-min-time 0.05]
                          [--seed 0] [--out suite.json] [--compile-timeout 300]
                          [--run-timeout 600] [--search-timeout 3600] [--polly-cc clang-14]
                          [--target x86-avx2]
                          [--warm-compile-cache] [--verbose]
                          [--tvm-python PATH | --no-tvm] [--tvm-trials N] [--tvm-timeout 3600]

For every selected suite kernel (``dojo_core/suite``) in each of its dtypes (``--dtypes``
filters them: f64 and f32 for the floating-point kernels, i32 or i8 for the integral ones),
at one dataset (default LARGE), and at each thread count (default 1 and all cores), one row:

  baseline  the untransformed kernel, dojo_core's C compiled by the harness's compiler with
            the host target's flags (gcc -O3 -march=native ...), timed by the harness
            (``harness.measure``: ``dojo_time`` in a child process). It has no parallel loop,
            so every thread count times the same sequential code.
  polly     the same generated C (kernel + ``codegen.c_entry.timing_entry``) compiled by clang-14
            with Polly: ``-O3 -march=native -mllvm -polly -mllvm -polly-vectorizer=stripmine``
            plus the baseline's math flags (``-std=gnu11 -fno-math-errno -fno-trapping-math
            -ffp-contract=fast``, so that FMA contraction is allowed to both), and at more
            than one thread ``-fopenmp -mllvm -polly-parallel`` (libomp). Timed by the same
            harness entry; its outputs are checked against the baseline's (harness
            tolerance): a Polly build whose outputs differ is an error cell, not a time.
  numpy     the suite entry's numpy reference where ``entry.peer`` is True (a whole-array
            expression a user could call instead), else "-". It runs in a child process per
            thread count whose environment has OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed
            and OPENBLAS/OMP/MKL_NUM_THREADS set, with threadpoolctl's limit (as
            bench/libraries.py does). Floating-point kernels are called on arrays of the
            row's dtype (an f32 row runs numpy in f32); when that does not match the
            baseline's outputs, or for integral kernels, the reference's own contract is
            used (float64 inputs) and the JSON says so (``numpy.mode``).
  agents    each of ``--agents`` searches at ``--budget`` measurements through the search
            API (``make_agent(name).search(root, LocalEvaluator(threads=t), budget)``), a
            fresh evaluator per agent and thread count (no measurement cache) and an empty
            compile cache (``--warm-compile-cache`` keeps the usual one): every search
            pays for its own compilations, so the wall times compare. Its best
            state is then rebuilt, checked against the baseline's outputs on the suite's
            inputs and timed like the others. The wall time of the search and its
            per-phase breakdown (``SearchResult.phases``: moves, replay, codegen, compile,
            reference, measure) are reported.
  tvm       TVM MetaSchedule at ``--tvm-trials`` measured trials (default ``--budget``: equal
            trials with the agents), for the kernels with a tensor-expression twin in
            bench/suite_tvm.py (f64 and f32; the others say "no TE twin"). It runs in
            ``--tvm-python``'s environment (default ``.venv-tvm/bin/python`` of the checkout
            when it exists; apache-tvm's pins clash with this project's), one subprocess per
            row (kernel, dtype, thread count: the target's ``num-cores`` and TVM's thread
            pool), after the row's other contenders, with ``--tvm-timeout``. The child tunes
            (``bench/tvm_common.py``, the route of bench/agents_tvm.py), runs the tuned
            function once on the row's inputs (the same arrays as the others, passed as an
            npz) and times it in ``--rounds`` rounds of at least ``--min-time`` s (median of
            the per-round medians; not interleaved with the other contenders). Its outputs
            come back and are checked here against the suite's numpy reference
            (``harness.compare``, the dtype's tolerance): outputs that differ make an error
            cell. The cell records the tuning time (``tuning_s``) and the subprocess's wall
            time (``wall_s``). Without a TVM environment (``--no-tvm``, no such interpreter,
            or apache-tvm not importable by it) every cell says "not run" and the JSON says
            why.

``--target`` (default this machine's) is the C target of the baseline, Polly (its ``-mno-...``
flags added) and the agents; a target narrower than the host (x86-avx2 on an AVX-512
machine) gives numpy that width too (``bench/peers.blas_env``: OpenBLAS's Haswell kernel), so
AVX2 code is compared with the library's AVX2 code; TVM, which builds for the host's ISA, is
not run then. A target that does not run natively here is refused.

Timing: ``--rounds`` rounds; in each round the contenders of a row run back to back (with
a short pause after a threaded one, so that spinning OpenMP/OpenBLAS workers go to sleep),
each for at least ``--min-time`` seconds and 3 repetitions after a warm-up; a contender's
figure is the median over rounds of its per-round medians (``min_s``: its best repetition).
Where some contender's round medians differ by more than 1.5x (a kernel of a few µs whose
time jumps between two modes from one child process to the next), the row gets as many
rounds again, and every contender's figure is then its fastest round median (the row's
``statistic`` says which; ``median_s`` and ``rounds`` stay in each cell).
Speedups are time ratios: ``X/base`` = baseline time / X's time, ``A/polly`` = Polly's time
/ agent A's time, ``A/numpy`` = numpy's time / agent A's time, ``A/tvm`` = TVM's time /
agent A's time (> 1: A is faster). The geometric mean of each column is taken per thread
count over the rows where it exists (for the TVM columns: the rows TVM ran).

Robustness: a kernel whose build, run or verification fails gets an error cell (the reason
in the JSON and under the table) and the run goes on; every compilation has a timeout
(``--compile-timeout``), every run and measurement one too (``--run-timeout``, in child
processes), and each search stops after ``--search-timeout`` seconds.

The header and the footer print the machine's ISA (``detect_host_target().name``) and the
load average at the start and the end. ``--out`` (default suite.json) gets everything,
rewritten after every row.

This script owns the options, the header and the footer; the TVM cells are
``suite_tvm_cell.py`` (the parent's side of the TVM child ``suite_tvm.py``), one kernel's other
cells ``suite_kernel.py``, the numpy child ``suite_numpy.py`` (over ``peers.py``, shared
with bench/libraries.py), the figures and the table ``suite_report.py``.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import cpu_model, load_text, short, usable_cores          # noqa: E402
from bench.peers import blas_env                                            # noqa: E402
from bench.suite_kernel import POLLY_PARALLEL, bench_kernel, polly_flags, version_of  # noqa: E402
from bench.suite_numpy import NumpyWorker, worker_main                      # noqa: E402
from bench.suite_report import errors_of, geomeans, print_table, save, speedups  # noqa: E402
from bench.suite_tvm_cell import NO_TWIN, TVM_VENV_PYTHON, tvm_cell, tvm_probe  # noqa: E402
from dojo_core import suite                                                 # noqa: E402
from dojo_core.agents import AGENTS                                         # noqa: E402
from dojo_core.codegen import detect_host_target, get_target              # noqa: E402
from dojo_core.codegen.targets import is_foreign                            # noqa: E402
from dojo_core.compile import find_compiler                                 # noqa: E402

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=None, help="comma-separated suite kernels (all)")
    ap.add_argument("--group", default=None, help="only kernels whose group starts with this "
                                                  "(polybench, ml, polybench/blas, ...)")
    ap.add_argument("--dtypes", default=None,
                    help="comma-separated dtypes to keep (default: each kernel's own)")
    ap.add_argument("--dataset", default="LARGE", choices=("MEDIUM", "LARGE", "test"))
    ap.add_argument("--threads", default="1,all",
                    help="comma-separated thread counts, 'all' = every core (1,all)")
    ap.add_argument("--agents", default="greedy,mcts")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.1,
                    help="seconds of repetitions per timing of the final figures (0.1)")
    ap.add_argument("--search-min-time", type=float, default=0.05,
                    help="seconds of repetitions per measurement during a search (0.05)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="suite.json")
    ap.add_argument("--compile-timeout", type=float, default=300)
    ap.add_argument("--run-timeout", type=float, default=600)
    ap.add_argument("--search-timeout", type=float, default=3600,
                    help="an agent's search stops after this many seconds (3600)")
    ap.add_argument("--target", default=None,
                    help="C target of the baseline, Polly and the agents (default: this "
                         "machine's); x86-avx2 on an AVX-512 machine measures AVX2 code "
                         "against the libraries' AVX2 kernels")
    ap.add_argument("--polly-cc", default="clang-14")
    ap.add_argument("--warm-compile-cache", action="store_true",
                    help="let the searches use the usual compile cache (default: each search "
                         "starts with an empty one, so that its wall time includes its "
                         "compilations)")
    ap.add_argument("--tvm-python", default=str(TVM_VENV_PYTHON) if TVM_VENV_PYTHON.exists()
                    else None,
                    help="interpreter of an environment with apache-tvm for the TVM peer "
                         "(default: .venv-tvm/bin/python of the checkout when it exists)")
    ap.add_argument("--no-tvm", action="store_true", help="do not run the TVM peer")
    ap.add_argument("--tvm-trials", type=int, default=None,
                    help="MetaSchedule's measured trials per row (default: --budget)")
    ap.add_argument("--tvm-timeout", type=float, default=3600,
                    help="seconds for one TVM subprocess: tuning, check and timing (3600)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    return ap, ap.parse_args(argv)


def main(argv=None) -> int:
    ap, args = parse_args(argv)
    if args.worker is not None:
        worker_main(args.worker)
        return 0

    started = time.perf_counter()
    ncpu = usable_cores()
    try:
        threads_list = sorted({(ncpu or 1) if t.strip() == "all" else int(t)
                               for t in args.threads.split(",") if t.strip()})
    except ValueError:
        ap.error(f"bad --threads {args.threads!r}")
    if not threads_list or min(threads_list) < 1:
        ap.error("--threads needs positive counts")
    agents = [a for a in args.agents.split(",") if a]
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        ap.error(f"unknown agents: {', '.join(unknown)} (known: {', '.join(sorted(AGENTS))})")
    names = suite.list_suite(args.group)
    if args.kernels:
        wanted = [k for k in args.kernels.split(",") if k]
        missing = [k for k in wanted if k not in suite.SUITE]
        if missing:
            ap.error(f"unknown suite kernels: {', '.join(missing)}")
        names = [k for k in wanted if k in names]
    if not names:
        ap.error("no suite kernel selected")
    keep = set(args.dtypes.split(",")) if args.dtypes else None
    pairs = [(n, d) for n in names for d in suite.info(n).dtypes if keep is None or d in keep]
    if not pairs:
        ap.error("no kernel has the dtypes asked for")

    host = detect_host_target()
    try:
        target = get_target(args.target) if args.target else host
    except KeyError as exc:
        ap.error(str(exc.args[0]))
    if is_foreign(target) or target.vector_bytes > host.vector_bytes:
        ap.error(f"target {target.name} does not run natively on this {host.name} machine")
    polly_cc = shutil.which(args.polly_cc)
    polly_missing = (None if polly_cc else
                     f"{args.polly_cc} is not installed (apt-get install clang-14 libomp-14-dev)")
    if args.tvm_trials is None:
        args.tvm_trials = args.budget
    tvm = tvm_probe(None if args.no_tvm else args.tvm_python)
    if tvm["run"] and target.name != host.name:
        tvm = {"run": False, "reason": f"TVM builds for this machine's ISA ({host.name}), "
                                       f"not for --target {target.name}"}
    if not args.no_tvm and not args.tvm_python:
        tvm["reason"] = (f"no TVM environment: {TVM_VENV_PYTHON.relative_to(ROOT)} does not "
                         f"exist (make one with apache-tvm, see bench/suite_tvm.py; or pass "
                         f"--tvm-python)")
    tvm_reason = None if tvm["run"] else tvm["reason"]
    try:
        base_cc = version_of(find_compiler())
    except Exception as exc:                                          # noqa: BLE001
        base_cc = short(exc)
    load_start = os.getloadavg()
    print(f"# bench/suite.py -- {cpu_model()}, {ncpu} cores, ISA {target.name}; dataset "
          f"{args.dataset}, threads {threads_list}, agents {agents} at budget {args.budget}, "
          f"{args.rounds} rounds of >= {args.min_time} s")
    print(f"# baseline: {base_cc} {' '.join(target.cflags)}")
    print("# polly: " + (f"{version_of(polly_cc)} {' '.join(polly_flags(1, target))}"
                          f" [+ {' '.join(POLLY_PARALLEL)} at > 1 thread]" if polly_cc
                          else f"not run: {polly_missing}"))
    if tvm["run"]:
        trials = (f"{args.tvm_trials} trials" if args.tvm_trials > 0 else
                  "0 trials (the default schedule, untuned)")
        print(f"# tvm: apache-tvm {tvm['version']} MetaSchedule at {trials} per row via "
              f"{tvm['python']}; TE twins: {', '.join(tvm['twins'])}")
    else:
        print(f"# tvm: not run ({tvm_reason})")
    print(f"# load average at start: {load_text(load_start)}", flush=True)

    workers = {t: NumpyWorker(t, blas_env(target, host)) for t in threads_list}
    for t, w in workers.items():
        hello = w.call(args.run_timeout, op="hello")     # starts the child
        pools = "; ".join(f"{p.get('internal_api')} {p.get('version')} "
                          f"kernel={p.get('architecture', '-')} threads={p.get('num_threads')}"
                          for p in (w.hello or {}).get("threadpoolctl") or [])
        print(f"# numpy at {t} thread(s): {(w.hello or {}).get('numpy')}, "
              f"{pools or (w.hello or {}).get('threadpoolctl_error') or hello.get('error')}")
    ctx = {"target": target, "agents": agents, "polly_cc": polly_cc,
           "polly_missing": polly_missing, "workers": workers, "tvm_reason": tvm_reason}
    doc = {
        "command": " ".join([Path(sys.argv[0]).name] + list(argv if argv is not None
                                                             else sys.argv[1:])),
        "machine": {"cpu": cpu_model(), "cores": ncpu, "platform": platform.platform(),
                    "isa": target.name, "cflags": list(target.cflags),
                    "ldflags": list(target.ldflags)},
        "baseline_compiler": base_cc,
        "polly": {"cc": polly_cc, "version": version_of(polly_cc) if polly_cc else None,
                  "flags": {"1": list(polly_flags(1, target)), "n": list(polly_flags(2, target))},
                  "skipped": polly_missing},
        "tvm": dict(tvm, trials=args.tvm_trials) if tvm["run"] else
               {"run": False, "reason": tvm_reason},
        "options": {k: v for k, v in vars(args).items() if k != "worker"},
        "threads": threads_list, "agents": agents,
        "load_average": {"start": list(load_start), "end": None},
        "rows": [], "geomeans": None,
    }
    rows = doc["rows"]
    try:
        for name, dtype in pairs:
            twin = tvm["run"] and name in tvm["twins"] and dtype in tvm["dtypes"]
            if tvm["run"] and not twin:
                ctx["tvm_reason"] = (f"{NO_TWIN} for {name}" if name not in tvm["twins"]
                                     else f"{NO_TWIN} for {name} in {dtype}")
            try:
                new = bench_kernel(name, dtype, threads_list, args, ctx)
            except Exception as exc:                                  # noqa: BLE001
                new = [{"kernel": name, "dtype": dtype, "threads": t, "agents": {},
                        "error": f"unexpected: {short(exc)}"} for t in threads_list]
                if args.verbose:
                    traceback.print_exc()
            for row in new:
                if not tvm["run"]:
                    continue
                if not twin:
                    row["tvm"] = {"cell": NO_TWIN, "reason": ctx["tvm_reason"]}
                    continue
                row["tvm"] = tvm_cell(name, dtype, row["threads"], args, tvm)
                if row.get("agents") is not None and "speedups" in row:
                    row["speedups"] = speedups(row, agents)
                cell = row["tvm"]
                print(f"  {name} {dtype} thr={row['threads']}: tvm tuned in "
                      f"{cell.get('tuning_s', 0):.1f} s ({cell.get('wall_s', 0):.1f} s in all)"
                      + (f" ({cell['error']})" if cell.get("error") else ""),
                      file=sys.stderr, flush=True)
            rows.extend(new)
            doc["geomeans"] = geomeans(rows, agents, threads_list)
            save(args.out, doc)
    finally:
        for w in workers.values():
            w.close()

    load_end = os.getloadavg()
    doc["load_average"]["end"] = list(load_end)
    doc["geomeans"] = geomeans(rows, agents, threads_list)
    doc["numpy_workers"] = {str(t): w.hello for t, w in workers.items()}
    doc["seconds"] = time.perf_counter() - started

    print()
    print_table(rows, agents, threads_list, doc["geomeans"])
    print()
    print("times: median over rounds, or the fastest round where a row's rounds were bimodal "
          "(ms); X/base = baseline time / X time; A/polly, A/numpy: "
          "Polly's, numpy's time / agent A's time; *_wall: the agent's search (s); "
          "A/tvm: TVM's time / agent A's time; tvm_wall_s: TVM's subprocess (tuning, check, "
          "timing; s); "
          "geomean rows: geometric means over the rows of that thread count where the column "
          "exists (walls: sums)")
    print(f"polly rows checked against the baseline's outputs: "
          f"{sum(1 for r in rows if (r.get('polly') or {}).get('verified'))} of "
          f"{sum(1 for r in rows if r.get('polly'))} verified")
    if tvm["run"]:
        tvm_rows = [r for r in rows if isinstance(r.get("tvm"), dict) and "trials" in r["tvm"]]
        tuning_s = sum(r["tvm"].get("tuning_s") or 0 for r in tvm_rows)
        wall_s = sum(r["tvm"].get("wall_s") or 0 for r in tvm_rows)
        print(f"tvm: MetaSchedule at {args.tvm_trials} trials; rows checked against the suite's "
              f"numpy reference: {sum(1 for r in tvm_rows if r['tvm'].get('verified'))} of "
              f"{len(tvm_rows)} verified; tuning {tuning_s:.0f} s, subprocesses {wall_s:.0f} s "
              f"in all; kernels without a TE twin say '{NO_TWIN}'")
    else:
        print(f"tvm: not run ({tvm_reason})")
    if polly_missing:
        print(f"polly: not run ({polly_missing})")
    for row in rows:
        for err in errors_of(row):
            print(f"error: {row['kernel']} {row['dtype']} thr={row['threads']}: {err}")
    print(f"ISA {target.name}; load average at start: {load_text(load_start)}; "
          f"at end: {load_text(load_end)}; total {doc['seconds']:.0f} s")
    save(args.out, doc)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

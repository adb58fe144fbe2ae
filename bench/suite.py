"""The agents on the benchmark suite against their peers, in one run (a benchmark, not a
test).

    python bench/suite.py [--kernels gemm,atax,... | --group polybench|ml] [--dtypes f64,f32]
                          [--dataset MEDIUM|LARGE|test] [--threads 1,all] [--agents greedy,mcts]
                          [--budget 100] [--rounds 3] [--min-time 0.1] [--search-min-time 0.05]
                          [--seed 0] [--out suite.json] [--compile-timeout 300]
                          [--run-timeout 600] [--search-timeout 3600] [--polly-cc clang-14]
                          [--warm-compile-cache] [--verbose]

For every selected suite kernel (``dojo_core/suite``) in each of its dtypes (``--dtypes``
filters them: f64 and f32 for the floating-point kernels, i32 or i8 for the integral ones),
at one dataset (default LARGE), and at each thread count (default 1 and all cores), one row:

  baseline  the untransformed kernel, dojo_core's C compiled by the harness's compiler with
            the host target's flags (gcc -O3 -march=native ...), timed by the harness
            (``harness.measure``: ``dojo_time`` in a child process). It has no parallel loop,
            so every thread count times the same sequential code.
  polly     the same generated C (kernel + ``codegen.c.timing_entry``) compiled by clang-14
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
  tvm       not run: bench/agents_tvm.py (the MetaSchedule route of bench/agents.py) has
            tensor-expression twins of four library kernels only, none of the suite's;
            the column says "not run" and the JSON says why.

Timing: ``--rounds`` rounds; in each round the contenders of a row run back to back (with
a short pause after a threaded one, so that spinning OpenMP/OpenBLAS workers go to sleep),
each for at least ``--min-time`` seconds and 3 repetitions after a warm-up; a contender's
figure is the median over rounds of its per-round medians (``min_s``: its best repetition).
Speedups are time ratios: ``X/base`` = baseline time / X's time, ``A/polly`` = Polly's time
/ agent A's time, ``A/numpy`` = numpy's time / agent A's time (> 1: A is faster). The
geometric mean of each column is taken per thread count over the rows where it exists.

Robustness: a kernel whose build, run or verification fails gets an error cell (the reason
in the JSON and under the table) and the run goes on; every compilation has a timeout
(``--compile-timeout``), every run and measurement one too (``--run-timeout``, in child
processes), and each search stops after ``--search-timeout`` seconds.

The header and the footer print the machine's ISA (``detect_host_target().name``) and the
load average at the start and the end. ``--out`` (default suite.json) gets everything,
rewritten after every row.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _bench_module(name: str):
    """A sibling bench script as a module, without putting bench/ on sys.path."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_libraries = _bench_module("libraries")       # bench/libraries.py: pipe protocol, numpy timing
UNSET, _recv, _send = _libraries.UNSET, _libraries._recv, _libraries._send
_time_fn, cpu_model = _libraries._time_fn, _libraries.cpu_model

POLLY_FLAGS = ("-O3", "-march=native", "-mllvm", "-polly", "-mllvm",
               "-polly-vectorizer=stripmine")
POLLY_PARALLEL = ("-fopenmp", "-mllvm", "-polly-parallel")
# the baseline's (dojo_core.codegen.targets.COMMON_FLAGS) language and math flags
MATH_FLAGS = ("-std=gnu11", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=fast")
PAUSE_S = 0.2
TVM_REASON = ("bench/agents_tvm.py has TVM tensor-expression twins of four library kernels "
              "(matmul, softmax, layernorm, conv2d) only, none of the suite's")


def short(exc: BaseException) -> str:
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return f"{type(exc).__name__}: " + (" | ".join(lines[:3]) or "(no message)")


# =============================================================================== numpy worker
# A child process per thread count: the suite's numpy references, with a cleaned environment.

def worker_main(threads: int) -> None:
    import numpy as np
    from dojo_core import harness, suite

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr           # stray prints must not corrupt the pipe
    limiter, tp_error, info = None, None, []
    np.zeros((8, 8)) @ np.zeros((8, 8))                        # load the BLAS
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
        limiter = threadpool_limits(limits=threads)
        info = threadpool_info()
    except ImportError as exc:
        tp_error = f"threadpoolctl not installed ({exc}): threads set by environment only"
    _send(out, {"threads": threads, "numpy": np.__version__, "threadpoolctl": info,
                "threadpoolctl_error": tp_error,
                "env_unset": [k for k in UNSET if k in os.environ]})
    prepared = {}
    while True:
        try:
            msg = _recv(inp)
        except EOFError:
            break
        if msg["op"] == "quit":
            break
        if msg["op"] == "hello":
            _send(out, {"ok": True})
            continue
        try:
            key = (msg["kernel"], msg["dtype"], tuple(sorted(msg["sizes"].items())))
            if msg["op"] == "prepare":
                entry = suite.info(msg["kernel"])
                program = suite.load(msg["kernel"], msg["dtype"], msg["sizes"])
                inputs = suite.random_inputs(msg["kernel"], program, 0)
                sizes = program.size_values
                integral = any(np.dtype(v.dtype).kind in "iu" for v in inputs.values())
                tried = {}
                for mode in (["native"] if not integral else []) + ["float64"]:
                    x = ({k: np.array(v) for k, v in inputs.items()} if mode == "native" else
                         {k: np.array(v, dtype=np.float64) for k, v in inputs.items()})
                    try:
                        got = entry.reference({k: v.copy() for k, v in x.items()}, sizes)
                    except Exception as exc:                          # noqa: BLE001
                        if mode != "native":
                            raise
                        tried[mode] = {"error": short(exc), "errors": {"*": math.inf}}
                        continue
                    dtypes = sorted({str(np.asarray(v).dtype) for v in got.values()})
                    errors = harness.compare(
                        {k: np.asarray(v) for k, v in got.items()}, msg["expected"], program)
                    tried[mode] = {"errors": errors, "out_dtypes": dtypes}
                    if all(e <= 1.0 for e in errors.values()):
                        break
                fn = (lambda entry=entry, x=x, sizes=sizes: entry.reference(x, sizes))
                prepared[key] = fn
                verified = all(e <= 1.0 for e in tried[mode]["errors"].values())
                _send(out, {"ok": True, "mode": mode, "verified": verified, "tried": tried,
                            "max_error": max(tried[mode]["errors"].values(), default=0.0)})
            elif msg["op"] == "time":
                _send(out, {"ok": True, **_time_fn(prepared[key], msg["min_time"])})
            else:
                raise ValueError(f"unknown op {msg['op']!r}")
        except Exception as exc:                                      # noqa: BLE001
            _send(out, {"ok": False, "error": short(exc)})
    del limiter


class NumpyWorker:
    """The numpy child at a fixed thread count; every call has a timeout (the child is
    killed and the next call starts a new one)."""

    def __init__(self, threads: int):
        self.threads = threads
        self.proc = None
        self.hello = None

    def _start(self, timeout: float):
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(self.threads)
        extra = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + extra if extra else "")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(self.threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.hello = self._read(timeout)

    def _read(self, timeout: float):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.kill()
            raise TimeoutError(f"numpy worker gave no answer within {timeout:g} s")
        return _recv(self.proc.stdout)

    def call(self, timeout: float, **msg) -> dict:
        try:
            if self.proc is None or self.proc.poll() is not None:
                self._start(timeout)
            _send(self.proc.stdin, msg)
            return self._read(timeout)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            self.kill()
            return {"ok": False, "error": short(exc)}

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        if self.proc is None:
            return
        try:
            _send(self.proc.stdin, {"op": "quit"})
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:                                             # noqa: BLE001
            self.kill()
        self.proc = None


# =============================================================================== builds

def build_with(program, cc: str, cflags, ldflags, target, timeout: float):
    """The harness Library of a program's generated C (kernel + timing entry) compiled by
    another compiler with other flags: ``harness.measure`` / ``run_c`` accept it as
    ``library=`` and time it exactly as they time the harness's own builds."""
    from dojo_core import harness
    from dojo_core.codegen import generate_c, timing_entry
    from dojo_core.compile import compile_shared
    source = generate_c(program, target) + timing_entry(program)
    compiled = compile_shared(source, tuple(cflags), tuple(ldflags), cc=cc, timeout=timeout)
    return harness.Library(program, compiled, target, tuple(cflags))


def version_of(cc) -> str:
    from dojo_core.compile import compiler_version
    try:
        return compiler_version(cc)
    except Exception as exc:                                          # noqa: BLE001
        return short(exc)


def polly_flags(threads: int) -> tuple:
    return POLLY_FLAGS + MATH_FLAGS + (POLLY_PARALLEL if threads > 1 else ())


def check_outputs(program, inputs, library, expected, threads, timeout) -> dict:
    """Run a build once (child process) and compare its outputs with ``expected``."""
    from dojo_core import harness
    got = harness.run_c(program, inputs, threads=threads, timeout=timeout, library=library)
    errors = harness.compare(got, expected, program)
    worst = max(errors.values(), default=0.0)
    return {"verified": all(e <= 1.0 for e in errors.values()), "max_error": worst}


# =============================================================================== helpers

def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a and b \
        else None


def geomean(values):
    values = [v for v in values if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def time_of(cell):
    return cell.get("median_s") if isinstance(cell, dict) else None


def ms(cell, width=9) -> str:
    if not isinstance(cell, dict):
        return "-".rjust(width)
    if cell.get("median_s"):
        return f"{cell['median_s'] * 1e3:{width}.4g}"
    if cell.get("error"):
        return "ERR".rjust(width)
    return (cell.get("cell") or "-").rjust(width)


def fx(v, width=8) -> str:
    return "-".rjust(width) if v is None else f"{v:{width}.2f}"


def normalize_phases(phases):
    if phases is None:
        return None
    if hasattr(phases, "totals"):
        phases = phases.totals()
    return {k: (v if isinstance(v, dict) else {"s": v}) for k, v in dict(phases).items()}


def speedup_columns(agents) -> list:
    cols = ["polly/base", "numpy/base"]
    for a in agents:
        cols += [f"{a}/base", f"{a}/polly", f"{a}/numpy"]
    return cols


def speedups(row, agents) -> dict:
    base, polly, npy = (time_of(row.get(k)) for k in ("baseline", "polly", "numpy"))
    out = {"polly/base": ratio(base, polly), "numpy/base": ratio(base, npy)}
    for a in agents:
        t = time_of(row["agents"].get(a))
        out[f"{a}/base"] = ratio(base, t)
        out[f"{a}/polly"] = ratio(polly, t)
        out[f"{a}/numpy"] = ratio(npy, t)
    return out


# =============================================================================== one kernel

class Contender:
    """Something timed in the rounds of a row: a harness Library or a numpy worker."""

    def __init__(self, name, library=None, worker=None, worker_msg=None, program=None):
        self.name, self.library, self.worker, self.worker_msg = name, library, worker, worker_msg
        self.program = program          # the state timed (default: the row's kernel)
        self.samples, self.error = [], None


def run_rounds(program, inputs, contenders, threads, args) -> None:
    from dojo_core import harness
    for _ in range(args.rounds):
        for c in contenders:
            if c.error:
                continue
            try:
                if c.library is not None:
                    m = harness.measure(c.program or program, inputs, min_time=args.min_time, min_reps=3,
                                        threads=threads, library=c.library,
                                        timeout=args.run_timeout)
                else:
                    m = c.worker.call(args.run_timeout, op="time", min_time=args.min_time,
                                      **c.worker_msg)
                    if not m.get("ok"):
                        raise RuntimeError(m.get("error"))
                c.samples.append((m["median_s"], m["min_s"]))
            except Exception as exc:                                  # noqa: BLE001
                c.error = short(exc)
            if threads > 1:
                time.sleep(PAUSE_S)


def summarize(c: Contender, extra: dict) -> dict:
    cell = dict(extra)
    if c.error:
        cell["error"] = c.error
    if c.samples:
        cell.update(median_s=statistics.median(s[0] for s in c.samples),
                    min_s=min(s[1] for s in c.samples),
                    rounds=[s[0] for s in c.samples])
    return cell


def search_cold(program, agent, threads, args, target):
    """(SearchResult, wall seconds) of one agent's search with a fresh LocalEvaluator (no
    measurement cache) and, unless --warm-compile-cache, a fresh compile cache: every
    agent pays for its own compilations, so that the wall times compare."""
    from dojo_core.agents import make_agent
    from dojo_core.agents.evaluators import LocalEvaluator
    saved = os.environ.get("DOJO_CACHE_DIR")
    cold = None if args.warm_compile_cache else tempfile.mkdtemp(prefix="dojo-suite-search-")
    evaluator = None
    try:
        if cold:
            os.environ["DOJO_CACHE_DIR"] = cold
        from dojo_core.suite import random_inputs as suite_inputs
        evaluator = LocalEvaluator(min_time=args.search_min_time, threads=threads,
                                   timeout=args.run_timeout, store=None, target=target,
                                   compile_timeout=args.compile_timeout,
                                   inputs=lambda root: suite_inputs(root.name, root, args.seed))
        deadline = time.monotonic() + args.search_timeout
        started = time.monotonic()
        result = make_agent(agent).search(program, evaluator, args.budget, seed=args.seed,
                                          should_stop=lambda: time.monotonic() > deadline)
        return result, time.monotonic() - started
    finally:
        if evaluator is not None:
            evaluator.close()
        if cold:
            if saved is None:
                os.environ.pop("DOJO_CACHE_DIR", None)
            else:
                os.environ["DOJO_CACHE_DIR"] = saved
            shutil.rmtree(cold, ignore_errors=True)


def bench_kernel(name, dtype, threads_list, args, ctx) -> list:
    """The rows of one kernel in one dtype, one per thread count (never raises)."""
    from dojo_core import harness, suite
    from dojo_core.steps import replay

    target, agents = ctx["target"], ctx["agents"]
    entry = suite.info(name)
    common = {"kernel": name, "dtype": dtype, "group": entry.group}
    try:
        program = suite.load(name, dtype, args.dataset)
        inputs = suite.random_inputs(name, program, 0)
        sizes = dict(program.size_values)
        common.update(sizes=sizes, flops=entry.flops(sizes) if entry.flops else None)
    except Exception as exc:                                          # noqa: BLE001
        return [dict(common, threads=t, error=f"load: {short(exc)}") for t in threads_list]

    # ---------------------------------------------------------------- baseline (gcc)
    try:
        base_lib = harness.build(program, target, timeout=args.compile_timeout)
        expected = harness.run_c(program, inputs, library=base_lib, timeout=args.run_timeout)
        expected = {k: v.copy() for k, v in expected.items()}
    except Exception as exc:                                          # noqa: BLE001
        msg = f"baseline: {short(exc)}"
        return [dict(common, threads=t, error=msg, baseline={"error": msg}, agents={})
                for t in threads_list]
    common["baseline_build"] = {"compiler": base_lib.compiled.compiler,
                                "flags": list(base_lib.compiled.flags),
                                "compile_s": base_lib.compiled.seconds}

    # ---------------------------------------------------------------- polly builds
    polly_libs = {}
    for t in threads_list:
        key = t > 1
        if key in polly_libs:
            continue
        flags = polly_flags(t)
        if ctx["polly_cc"] is None:
            polly_libs[key] = {"cell": "not run", "skipped": ctx["polly_missing"],
                               "flags": list(flags)}
            continue
        try:
            lib = build_with(program, ctx["polly_cc"], flags, target.ldflags, target,
                             args.compile_timeout)
            check = check_outputs(program, inputs, lib, expected, t, args.run_timeout)
            info = {"flags": list(lib.compiled.flags), "compiler": lib.compiled.compiler,
                    "compile_s": lib.compiled.seconds, "verified_against": "baseline",
                    **check}
            if not check["verified"]:
                info["error"] = (f"Polly's outputs differ from the baseline's (worst error "
                                 f"{check['max_error']:.3g} x the tolerance)")
            polly_libs[key] = (lib, info)
        except Exception as exc:                                      # noqa: BLE001
            polly_libs[key] = {"error": f"polly: {short(exc)}", "flags": list(flags),
                               "verified": False}

    # ---------------------------------------------------------------- numpy (prepare)
    numpy_ready = {}
    if entry.peer:
        for t in threads_list:
            r = ctx["workers"][t].call(args.run_timeout, op="prepare", kernel=name, dtype=dtype,
                                       sizes=sizes, expected=expected)
            if not r.get("ok"):
                numpy_ready[t] = {"error": f"numpy: {r.get('error')}"}
            elif not r["verified"]:
                numpy_ready[t] = {"error": f"numpy's outputs differ from the baseline's "
                                           f"(worst {r['max_error']:.3g} x the tolerance)",
                                  "mode": r["mode"], "tried": r["tried"]}
            else:
                numpy_ready[t] = {"mode": r["mode"], "verified": True,
                                  "max_error": r["max_error"],
                                  "out_dtypes": r["tried"][r["mode"]].get("out_dtypes")}

    rows = []
    for t in threads_list:
        row = dict(common, threads=t, agents={},
                   tvm={"cell": "not run", "reason": ctx["tvm_reason"]})
        # ------------------------------------------------------------ agents
        agent_libs = {}
        for agent in agents:
            cell = {}
            try:
                result, wall = search_cold(program, agent, t, args, target)
                best = result.best
                cell.update(wall_s=wall, measurements=len(result.trials),
                            stopped=bool(result.stopped), steps=list(best.steps),
                            search_median_s=best.median_s,
                            search_baseline_s=result.baseline.median_s,
                            failed_measurements=sum(1 for tr in result.trials
                                                    if tr.median_s is None),
                            phases=normalize_phases(getattr(result, "phases", None)))
                state = replay(program, list(best.steps), f"<{agent} best>")
                lib = harness.build(state, target, timeout=args.compile_timeout)
                check = check_outputs(state, inputs, lib, expected, t, args.run_timeout)
                cell.update(check)
                if not check["verified"]:
                    cell["error"] = (f"the best state's outputs differ from the baseline's on "
                                     f"the suite inputs (worst {check['max_error']:.3g} x "
                                     f"the tolerance)")
                else:
                    agent_libs[agent] = (state, lib)
            except Exception as exc:                                  # noqa: BLE001
                cell["error"] = f"{agent}: {short(exc)}"
                if args.verbose:
                    traceback.print_exc()
            row["agents"][agent] = cell
            print(f"  {name} {dtype} thr={t}: {agent} searched in {cell.get('wall_s', 0):.1f} s"
                  + (f" ({cell['error']})" if cell.get("error") else ""),
                  file=sys.stderr, flush=True)

        # ------------------------------------------------------------ timing rounds
        base = Contender("baseline", library=base_lib)
        contenders = [base]
        polly = polly_libs[t > 1]
        polly_c = None
        if isinstance(polly, tuple) and not polly[1].get("error"):
            polly_c = Contender("polly", library=polly[0])
            contenders.append(polly_c)
        agent_cs = {agent: Contender(agent, library=lib, program=state)
                    for agent, (state, lib) in agent_libs.items()}
        contenders += list(agent_cs.values())
        numpy_c = None
        if entry.peer and not numpy_ready[t].get("error"):
            numpy_c = Contender("numpy", worker=ctx["workers"][t],
                                worker_msg={"kernel": name, "dtype": dtype, "sizes": sizes})
            contenders.append(numpy_c)
        run_rounds(program, inputs, contenders, t, args)

        row["baseline"] = summarize(base, common["baseline_build"])
        if polly_c is not None:
            row["polly"] = summarize(polly_c, polly[1])
        else:
            row["polly"] = dict(polly[1]) if isinstance(polly, tuple) else dict(polly)
        if not entry.peer:
            row["numpy"] = {"cell": "-", "skipped": "no numpy peer (entry.peer is False)"}
        elif numpy_c is None:
            row["numpy"] = numpy_ready[t]
        else:
            row["numpy"] = summarize(numpy_c, numpy_ready[t])
        for agent, c in agent_cs.items():
            row["agents"][agent] = summarize(c, row["agents"][agent])
        row["speedups"] = speedups(row, agents)
        rows.append(row)
    return rows


# =============================================================================== output

def table_columns(agents) -> list:
    """(title, width, cell of a row, cell of a geomean line) of the printed table."""
    cols = [("kernel", 18, lambda r: f"{r['kernel']:18s}", lambda g, t: f"{'geomean':18s}"),
            ("dt", 3, lambda r: f"{r['dtype']:3s}", lambda g, t: " " * 3),
            ("thr", 3, lambda r: f"{r['threads']:3d}", lambda g, t: f"{t:3d}")]
    for key in ["baseline", "polly", "numpy"] + list(agents):
        title = {"baseline": "base"}.get(key, key) + "_ms"

        def cell(r, key=key, w=max(9, len(title))):
            return ms(r.get(key) if key in ("baseline", "polly", "numpy")
                      else (r.get("agents") or {}).get(key), w)
        cols.append((title, max(9, len(title)), cell, None))
    for c in speedup_columns(agents):
        w = max(8, len(c))
        cols.append((c, w, lambda r, c=c, w=w: fx((r.get("speedups") or {}).get(c), w),
                     lambda g, t, c=c, w=w: fx(g[c]["value"], w)))
    for a in agents:
        title = f"{a}_wall_s"
        w = max(9, len(title))
        cols.append((title, w,
                     lambda r, a=a, w=w: fx((r.get("agents") or {}).get(a, {}).get("wall_s"), w),
                     lambda g, t, a=a, w=w: fx(g["agents_wall_s"][a], w)))
    cols.append(("tvm", 7, lambda r: f"{'not run':>7s}", None))
    return cols


def print_table(rows, agents, threads_list, gms) -> None:
    cols = table_columns(agents)
    head = " ".join(f"{t:<{w}s}" if i == 0 else f"{t:>{w}s}" for i, (t, w, _, _) in enumerate(cols))
    print(head)
    print("-" * len(head))
    for t in threads_list:
        for row in rows:
            if row.get("threads") == t:
                print(" ".join(cell(row) for _, _, cell, _ in cols), flush=True)
        print(" ".join(g(gms[str(t)], t) if g else " " * w for _, w, _, g in cols).rstrip())


def geomeans(rows, agents, threads_list) -> dict:
    out = {}
    for t in threads_list:
        mine = [r for r in rows if r.get("threads") == t]
        out[str(t)] = {c: {"value": geomean((r.get("speedups") or {}).get(c) for r in mine),
                           "n": sum(1 for r in mine if (r.get("speedups") or {}).get(c))}
                       for c in speedup_columns(agents)}
        out[str(t)]["agents_wall_s"] = {
            a: sum(r["agents"].get(a, {}).get("wall_s") or 0.0 for r in mine
                   if r.get("agents")) for a in agents}
    return out


def errors_of(row) -> list:
    found = []
    if row.get("error"):
        found.append(row["error"])
    for key in ("baseline", "polly", "numpy"):
        cell = row.get(key)
        if isinstance(cell, dict) and cell.get("error") and cell["error"] not in found:
            found.append(f"{key}: {cell['error']}" if not cell["error"].startswith(key)
                         else cell["error"])
    for a, cell in (row.get("agents") or {}).items():
        if cell.get("error"):
            found.append(cell["error"] if cell["error"].startswith(a) else f"{a}: {cell['error']}")
    return found


def save(path, doc) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, path)


# =============================================================================== main

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
    ap.add_argument("--polly-cc", default="clang-14")
    ap.add_argument("--warm-compile-cache", action="store_true",
                    help="let the searches use the usual compile cache (default: each search "
                         "starts with an empty one, so that its wall time includes its "
                         "compilations)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    return ap, ap.parse_args(argv)


def main(argv=None) -> int:
    ap, args = parse_args(argv)
    if args.worker is not None:
        worker_main(args.worker)
        return 0

    from dojo_core import suite
    from dojo_core.agents import AGENTS
    from dojo_core.codegen import detect_host_target
    from dojo_core.compile import find_compiler

    started = time.perf_counter()
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
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

    target = detect_host_target()
    polly_cc = shutil.which(args.polly_cc)
    polly_missing = (None if polly_cc else
                     f"{args.polly_cc} is not installed (apt-get install clang-14 libomp-14-dev)")
    import importlib.util
    tvm_reason = TVM_REASON + ("" if importlib.util.find_spec("tvm") else
                               "; apache-tvm is not importable here either")
    try:
        base_cc = version_of(find_compiler())
    except Exception as exc:                                          # noqa: BLE001
        base_cc = short(exc)
    load_start = os.getloadavg()
    print(f"# bench/suite.py -- {cpu_model()}, {ncpu} cores, ISA {target.name}; dataset "
          f"{args.dataset}, threads {threads_list}, agents {agents} at budget {args.budget}, "
          f"{args.rounds} rounds of >= {args.min_time} s")
    print(f"# baseline: {base_cc} {' '.join(target.cflags)}")
    print("# polly: " + (f"{version_of(polly_cc)} {' '.join(polly_flags(1))}"
                          f" [+ {' '.join(POLLY_PARALLEL)} at > 1 thread]" if polly_cc
                          else f"not run: {polly_missing}"))
    print(f"# tvm: not run ({tvm_reason})")
    print(f"# load average at start: {load_start[0]:.2f} {load_start[1]:.2f} "
          f"{load_start[2]:.2f}", flush=True)

    workers = {t: NumpyWorker(t) for t in threads_list}
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
                  "flags": {"1": list(polly_flags(1)), "n": list(polly_flags(2))},
                  "skipped": polly_missing},
        "tvm": {"run": False, "reason": tvm_reason},
        "options": {k: v for k, v in vars(args).items() if k != "worker"},
        "threads": threads_list, "agents": agents,
        "load_average": {"start": list(load_start), "end": None},
        "rows": [], "geomeans": None,
    }
    rows = doc["rows"]
    try:
        for name, dtype in pairs:
            try:
                new = bench_kernel(name, dtype, threads_list, args, ctx)
            except Exception as exc:                                  # noqa: BLE001
                new = [{"kernel": name, "dtype": dtype, "threads": t, "agents": {},
                        "error": f"unexpected: {short(exc)}"} for t in threads_list]
                if args.verbose:
                    traceback.print_exc()
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
    print("times: median over rounds (ms); X/base = baseline time / X time; A/polly, A/numpy: "
          "Polly's, numpy's time / agent A's time; *_wall: the agent's search (s); "
          "geomean rows: geometric means over the rows of that thread count (walls: sums)")
    print(f"polly rows checked against the baseline's outputs: "
          f"{sum(1 for r in rows if (r.get('polly') or {}).get('verified'))} of "
          f"{sum(1 for r in rows if r.get('polly'))} verified")
    print(f"tvm: not run ({tvm_reason})")
    if polly_missing:
        print(f"polly: not run ({polly_missing})")
    for row in rows:
        for err in errors_of(row):
            print(f"error: {row['kernel']} {row['dtype']} thr={row['threads']}: {err}")
    print(f"ISA {target.name}; load average at start: {load_start[0]:.2f} {load_start[1]:.2f} "
          f"{load_start[2]:.2f}; at end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}; "
          f"total {doc['seconds']:.0f} s")
    save(args.out, doc)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

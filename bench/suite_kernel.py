"""One row group of bench/suite.py: a suite kernel in one dtype at every thread count.

Owns the peers' builds (``build_with``: the generated C compiled by another compiler with
other flags, timed by the harness like its own builds; ``polly_flags``; ``check_outputs``),
an agent's cold search (``search_cold``: a fresh evaluator and, unless asked otherwise, an
empty compile cache, so that wall times include compilations), the timing rounds
(``Contender``, ``run_rounds``, ``summarize``) and ``bench_kernel``, which ties them
together.

Guarantees: ``bench_kernel`` never raises: a failing build, run, check or search becomes an
``error`` in its cell and the other cells go on; every peer and every agent's best state is
checked against the baseline's outputs before it is timed; the process environment
(``DOJO_CACHE_DIR``) is restored after every search.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback

from bench.common import short
from bench.suite_report import speedups
from dojo_core import harness, suite
from dojo_core.agents import make_agent
from dojo_core.agents.evaluators import LocalEvaluator
from dojo_core.codegen import generate_c, timing_entry
from dojo_core.compile import compile_shared, compiler_version
from dojo_core.steps import replay

POLLY_FLAGS = ("-O3", "-march=native", "-mllvm", "-polly", "-mllvm",
               "-polly-vectorizer=stripmine")
POLLY_PARALLEL = ("-fopenmp", "-mllvm", "-polly-parallel")
# the baseline's (dojo_core.codegen.targets.COMMON_FLAGS) language and math flags
MATH_FLAGS = ("-std=gnu11", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=fast")
THREADED_PAUSE_S = 0.2   # after a threaded contender: its spinning workers go to sleep


def build_with(program, cc: str, cflags, ldflags, target, timeout: float):
    """The harness Library of a program's generated C (kernel + timing entry) compiled by
    another compiler with other flags: ``harness.measure`` / ``run_c`` accept it as
    ``library=`` and time it exactly as they time the harness's own builds."""
    source = generate_c(program, target) + timing_entry(program)
    compiled = compile_shared(source, tuple(cflags), tuple(ldflags), cc=cc, timeout=timeout)
    return harness.Library(program, compiled, target, tuple(cflags))


def version_of(cc) -> str:
    try:
        return compiler_version(cc)
    except Exception as exc:                                          # noqa: BLE001
        return short(exc)


def polly_flags(threads: int, target=None) -> tuple:
    """Polly's flags at ``threads``; for a target narrower than ``-march=native`` (x86-avx2
    on an AVX-512 machine) also the target's ``-mno-...`` flags, so that Polly's code uses
    the same vector width as the baseline's."""
    narrowing = tuple(f for f in (target.cflags if target else ()) if f.startswith("-mno-"))
    return POLLY_FLAGS + narrowing + MATH_FLAGS + (POLLY_PARALLEL if threads > 1 else ())


def check_outputs(program, inputs, library, expected, threads, timeout) -> dict:
    """Run a build once (child process) and compare its outputs with ``expected``."""
    got = harness.run_c(program, inputs, threads=threads, timeout=timeout, library=library)
    errors = harness.compare(got, expected, program)
    worst = max(errors.values(), default=0.0)
    return {"verified": all(e <= 1.0 for e in errors.values()), "max_error": worst}


def normalize_phases(phases):
    if phases is None:
        return None
    if hasattr(phases, "totals"):
        phases = phases.totals()
    return {k: (v if isinstance(v, dict) else {"s": v}) for k, v in dict(phases).items()}


class Contender:
    """Something timed in the rounds of a row: a harness Library or a numpy worker."""

    def __init__(self, name, library=None, worker=None, worker_msg=None, program=None):
        self.name, self.library, self.worker, self.worker_msg = name, library, worker, worker_msg
        self.program = program          # the state timed (default: the row's kernel)
        self.samples, self.error = [], None


BIMODAL_SPREAD = 1.5    # slowest / fastest round median of one contender beyond which a
                        # row's rounds are taken as showing two modes, not noise around one


def run_rounds(program, inputs, contenders, threads, args) -> None:
    """``args.rounds`` rounds, each timing every contender once; where any contender's
    round medians spread beyond ``BIMODAL_SPREAD`` (µs kernels whose time jumps between two
    modes from one child process to the next), as many rounds again, once."""
    _rounds(program, inputs, contenders, threads, args, args.rounds)
    if bimodal(contenders):
        _rounds(program, inputs, contenders, threads, args, args.rounds)


def _rounds(program, inputs, contenders, threads, args, count) -> None:
    for _ in range(count):
        for c in contenders:
            if c.error:
                continue
            try:
                if c.library is not None:
                    m = harness.measure(c.program or program, inputs,
                                        min_time=args.min_time, min_reps=3, threads=threads,
                                        library=c.library, timeout=args.run_timeout)
                else:
                    m = c.worker.call(args.run_timeout, op="time", min_time=args.min_time,
                                      **c.worker_msg)
                    if not m.get("ok"):
                        raise RuntimeError(m.get("error"))
                c.samples.append((m["median_s"], m["min_s"]))
            except Exception as exc:                                  # noqa: BLE001
                c.error = short(exc)
            if threads > 1:
                time.sleep(THREADED_PAUSE_S)


def bimodal(contenders) -> bool:
    """Whether the round medians of some contender spread beyond ``BIMODAL_SPREAD``."""
    return any(c.samples and max(s[0] for s in c.samples) > BIMODAL_SPREAD *
               min(s[0] for s in c.samples) for c in contenders)


def summarize(c: Contender, extra: dict, fastest_round: bool = False) -> dict:
    """The contender's cell: ``median_s`` (the median of its round medians), ``min_s`` (its
    best repetition), ``rounds``; and ``figure_s``, the time its ratios use: the median of
    the round medians, or with ``fastest_round`` (a row whose rounds were bimodal, applied
    to every contender of the row alike) the fastest round median, so that two modes
    drawn by chance do not decide the comparison."""
    cell = dict(extra)
    if c.error:
        cell["error"] = c.error
    if c.samples:
        rounds = [s[0] for s in c.samples]
        cell.update(median_s=statistics.median(rounds), min_s=min(s[1] for s in c.samples),
                    rounds=rounds)
        cell["figure_s"] = min(rounds) if fastest_round else cell["median_s"]
    return cell


def search_outcome(result) -> str:
    """"kept" (the best state has steps), "not confirmed" (a trial timed below the root,
    but re-timed beside it, it was not faster in every round: the root was kept) or
    "nothing found" (no trial timed below the root)."""
    if result.best.steps:
        return "kept"
    conf = result.confirmation
    return "not confirmed" if conf and conf.get("kept") == "root" else "nothing found"


def search_cold(program, agent, threads, args, target):
    """(SearchResult, wall seconds) of one agent's search with a fresh LocalEvaluator (no
    measurement cache) and, unless --warm-compile-cache, a fresh compile cache: every
    agent pays for its own compilations, so that the wall times compare."""
    saved = os.environ.get("DOJO_CACHE_DIR")
    cold = None if args.warm_compile_cache else tempfile.mkdtemp(prefix="dojo-suite-search-")
    evaluator = None
    try:
        if cold:
            os.environ["DOJO_CACHE_DIR"] = cold
        evaluator = LocalEvaluator(min_time=args.search_min_time, threads=threads,
                                   timeout=args.run_timeout, store=None, target=target,
                                   compile_timeout=args.compile_timeout,
                                   inputs=lambda root: suite.random_inputs(root.name, root,
                                                                           args.seed))
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
        flags = polly_flags(t, target)
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
                            phases=normalize_phases(getattr(result, "phases", None)),
                            confirmation=result.confirmation, outcome=search_outcome(result))
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
                  + (f", {cell['outcome']}" if cell.get("outcome") else "")
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
        # a search that kept the untransformed kernel returns the baseline's program: the
        # same binary, so the baseline's timings (a second timing would differ by noise only)
        agent_cs = {agent: base if not row["agents"][agent].get("steps") else
                    Contender(agent, library=lib, program=state)
                    for agent, (state, lib) in agent_libs.items()}
        contenders += [c for c in agent_cs.values() if c is not base]
        numpy_c = None
        if entry.peer and not numpy_ready[t].get("error"):
            numpy_c = Contender("numpy", worker=ctx["workers"][t],
                                worker_msg={"kernel": name, "dtype": dtype, "sizes": sizes})
            contenders.append(numpy_c)
        run_rounds(program, inputs, contenders, t, args)
        fastest = bimodal(contenders)
        row["statistic"] = "fastest round median (bimodal rounds)" if fastest else \
            "median of round medians"

        row["baseline"] = summarize(base, common["baseline_build"], fastest)
        if polly_c is not None:
            row["polly"] = summarize(polly_c, polly[1], fastest)
        else:
            row["polly"] = dict(polly[1]) if isinstance(polly, tuple) else dict(polly)
        if not entry.peer:
            row["numpy"] = {"cell": "-", "skipped": "no numpy peer (entry.peer is False)"}
        elif numpy_c is None:
            row["numpy"] = numpy_ready[t]
        else:
            row["numpy"] = summarize(numpy_c, numpy_ready[t], fastest)
        for agent, c in agent_cs.items():
            row["agents"][agent] = summarize(c, row["agents"][agent], fastest)
            if c is base:
                row["agents"][agent]["timed_as"] = "baseline (no steps: the same program)"
        row["speedups"] = speedups(row, agents)
        rows.append(row)
    return rows

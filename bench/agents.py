"""Search agents against the expert schedules, numpy and TVM MetaSchedule (a benchmark, not a
test).

    python bench/agents.py [--kernels matmul,softmax,layernorm,conv2d,attention]
                           [--agents random,greedy,beam,mcts[,q]] [--budgets 100,300]
                           [--threads 1] [--target T] [--min-time 0.05] [--seed 0]
                           [--confirm-time 0.3] [--confirm-rounds 3] [--out agents.json]
                           [--tvm-trials N | --no-tvm] [--tvm-python PATH]

For each kernel at its default sizes: the untransformed kernel, the target's own ``.steps``
schedule (``NAME.TARGET.steps`` where it exists, else ``NAME.steps``) and
every agent's best state are measured with the same kind of ``LocalEvaluator`` (compiled C,
verified against the untransformed kernel, timed in a measuring child; ``--threads``
OpenMP threads, default 1 because these machines are shared and small).  Each agent runs
ONCE at the largest budget, whose figure is the agent's answer (``SearchResult.best``: the
state its confirmation kept, of the fastest ones re-timed); the figure at a smaller budget
is ``SearchResult.best_within`` of that run (the best among its first N measurements).
Agents share one measurement cache per benchmark run (a state measured by one agent is a
cache hit for the next: it costs the next agent budget, not time), so wall times after the
first agent are lower bounds.

Columns: speedup over the untransformed kernel, ratio to the ``.steps`` schedule
(steps time / agent time: >= 1 means the agent found something as fast), ratio to numpy
(numpy time / agent time; numpy timed in a child process with ``OPENBLAS_CORETYPE`` and
``OPENBLAS_L2_SIZE`` removed and its thread count set, and for a target narrower than the
host OpenBLAS's kernel of that width, as bench/libraries.py does), wall
time of the search.  The table's figures are not the search's: once a kernel's agents have
run, its comparison set (the untransformed kernel, the ``.steps`` state and every agent's
best at every budget, each distinct state once) is timed again, ``--confirm-time`` seconds
a timing, in a measuring child started for that kernel alone (``remeasure(fresh=True)``:
what was measured before, in the search or for another kernel, cannot move them), in
``--confirm-rounds`` interleaved rounds (so that a drift of the machine hits every state
alike); a state's figure is the median of its rounds.  The TVM MetaSchedule peer
(bench/agents_tvm.py: matmul, softmax, layernorm and conv2d, at the largest budget as its
trial count unless ``--tvm-trials``) runs in a child process, from ``--tvm-python``'s
environment, after the agents of its kernel (row ``tvm``: its speedup over the
untransformed kernel timed in this run, wall = tuning time); it is skipped when
``apache-tvm`` is absent.  ``--agents ''`` measures only the references and TVM.
Writes everything as JSON to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import ratio                                   # noqa: E402
from bench.peers import blas_env, peer_env                       # noqa: E402
from dojo_core.agents import AGENTS, make_agent                  # noqa: E402
from dojo_core.agents.evaluators import LocalEvaluator           # noqa: E402
from dojo_core.codegen import get_target                         # noqa: E402
from dojo_core.kernels import load_kernel, steps_path            # noqa: E402
from dojo_core.records import RecordStore                        # noqa: E402
from dojo_core.steps import read_steps                           # noqa: E402


def numpy_time(name: str, threads: int, min_time: float, env_extra: dict | None = None):
    """numpy's time for a library kernel (bench/libraries.py's numpy versions), in a child
    whose environment adds ``env_extra`` (the code paths of a narrower target)."""
    code = (
        "import json, sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
        "import numpy as np\n"
        "from bench.peer_kernels import numpy_fn\n"
        "from bench.peers import time_fn\n"
        "from dojo_core.kernels import load_kernel, random_inputs\n"
        "p = load_kernel(%r)\n"
        "fn, _ = numpy_fn(np, %r, random_inputs(p, 0), p.size_values)\n"
        "print(json.dumps(time_fn(fn, %r)))\n"
    ) % (str(ROOT / "bench"), str(ROOT), name, name, max(min_time, 0.2))
    env = peer_env(threads, env_extra)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=300)
        return json.loads(out.stdout.strip().splitlines()[-1])["median_s"]
    except (subprocess.SubprocessError, ValueError, IndexError, KeyError):
        return None


TVM_KERNELS = ("matmul", "softmax", "layernorm", "conv2d")      # bench/agents_tvm.py's twins


def tvm_peer(kernel: str, trials: int, threads: int, python: str | None = None):
    """TVM MetaSchedule on a library kernel in a child process: ``python`` is the interpreter of an
    environment that has apache-tvm (TVM's pins clash with this project's, so it usually
    lives in a venv of its own); by default this interpreter."""
    python = python or sys.executable
    probe = subprocess.run([python, "-c", "import tvm"], capture_output=True)
    if probe.returncode != 0:
        return {"skipped": f"apache-tvm is not importable by {python}"}
    cmd = [python, str(ROOT / "bench" / "agents_tvm.py"), "--kernel", kernel,
           "--trials", str(trials), "--threads", str(threads)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as exc:
        return {"skipped": f"TVM run failed: {type(exc).__name__}"}


def fmt(v, spec="6.2f"):
    return format(v, spec) if isinstance(v, (int, float)) and v is not None else "   -  "


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", default="matmul,softmax,layernorm,conv2d,attention")
    ap.add_argument("--agents", default=",".join(a for a in ("random", "greedy", "beam", "mcts", "q")
                                                 if a in AGENTS))
    ap.add_argument("--budgets", default="100,300")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", default=None,
                    help="C target (default: this machine's); the .steps compared are the "
                         "target's own (NAME.TARGET.steps where it exists)")
    ap.add_argument("--min-time", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="agents.json")
    ap.add_argument("--tvm-trials", type=int, default=None)
    ap.add_argument("--no-tvm", action="store_true")
    ap.add_argument("--tvm-python", default=None,
                    help="interpreter of an environment with apache-tvm (default: this one)")
    ap.add_argument("--confirm-time", type=float, default=0.3,
                    help="min time of the final timings (untransformed, .steps, each best)")
    ap.add_argument("--confirm-rounds", type=int, default=3,
                    help="interleaved rounds of the final timings, in a fresh child per kernel")
    args = ap.parse_args(argv)
    budgets = sorted(int(b) for b in args.budgets.split(","))
    agents = [a for a in args.agents.split(",") if a]
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        print(f"unknown agents: {unknown} (known: {sorted(AGENTS)})", file=sys.stderr)
        return 2
    store = RecordStore(Path(tempfile.mkdtemp(prefix="bench-agents-")) / "measurements.jsonl")
    evaluator = LocalEvaluator(min_time=args.min_time, threads=args.threads, store=store,
                               target=args.target)
    # the figures: every kernel's comparison set timed again, longer, in a fresh child
    confirm = LocalEvaluator(min_time=args.confirm_time, threads=args.threads, store=None,
                             target=args.target)
    print(f"# bench/agents.py  threads={args.threads} min_time={args.min_time} budgets={budgets}"
          f"  confirm {args.confirm_rounds} x {args.confirm_time} s  load={os.getloadavg()[0]:.2f}",
          flush=True)
    report = {"threads": args.threads, "min_time": args.min_time, "budgets": budgets,
              "confirm_time": args.confirm_time, "confirm_rounds": args.confirm_rounds,
              "kernels": {}, "command": " ".join(sys.argv)}
    for name in [k for k in args.kernels.split(",") if k]:
        root = load_kernel(name)
        own = steps_path(name, evaluator.target)      # the target's own schedule
        expert_steps = tuple(t for _, t in read_steps(own)) if own else ()
        np_s = numpy_time(name, args.threads, args.min_time,
                          blas_env(get_target(evaluator.target), get_target(None)))
        searched = {}
        for agent in agents:
            started = time.monotonic()
            result = make_agent(agent).search(root, evaluator, budgets[-1], seed=args.seed)
            searched[agent] = (result, time.monotonic() - started)
            print(f"# {name}: {agent} measured {len(result.trials)} states in "
                  f"{searched[agent][1]:.0f} s", flush=True)
        bests = {(agent, b): result.best if b == budgets[-1] else result.best_within(b)
                 for agent, (result, _) in searched.items() for b in budgets}
        states = [()] + ([expert_steps] if expert_steps else []) + \
            [best.steps for best in bests.values() if best.median_s]
        times = comparison_times(confirm, root, states, args.confirm_rounds)
        base_s = times[()]
        steps_s = times[expert_steps] if expert_steps else None
        entry = {"baseline_s": base_s, "steps_s": steps_s, "numpy_s": np_s, "agents": {}}
        print(f"\n## {name}: untransformed {fmt(base_s and base_s * 1e3, '8.3f')} ms, "
              f"{own.name if own else '.steps'} "
              f"{fmt(steps_s and steps_s * 1e3, '8.3f')} ms, numpy "
              f"{fmt(np_s and np_s * 1e3, '8.3f')} ms", flush=True)
        print(f"{'agent':8} {'budget':>6} {'speedup':>8} {'x.steps':>8} {'x.numpy':>8} "
              f"{'wall_s':>7}  best steps")
        for agent, (result, wall) in searched.items():
            rows = {}
            for b in budgets:
                best = bests[agent, b]
                t = times[best.steps] if best.median_s else None
                rows[b] = {"median_s": t, "search_median_s": best.median_s,
                           "speedup": ratio(base_s, t), "vs_steps": ratio(steps_s, t),
                           "vs_numpy": ratio(np_s, t),
                           "steps": list(best.steps), "measurements": min(b, len(result.trials))}
                print(f"{agent:8} {b:6d} {fmt(rows[b]['speedup'], '8.2f')} "
                      f"{fmt(rows[b]['vs_steps'], '8.2f')} {fmt(rows[b]['vs_numpy'], '8.2f')} "
                      f"{wall:7.0f}  {len(best.steps)} steps", flush=True)
            entry["agents"][agent] = {"wall_s": wall, "budgets": rows,
                                      "measurements": len(result.trials)}
        if name in TVM_KERNELS and not args.no_tvm:
            trials = args.tvm_trials or budgets[-1]
            peer = tvm_peer(name, trials, args.threads, python=args.tvm_python)
            if peer.get("median_s"):
                peer.update(speedup=ratio(base_s, peer["median_s"]),
                            vs_steps=ratio(steps_s, peer["median_s"]),
                            vs_numpy=ratio(np_s, peer["median_s"]))
                print(f"{'tvm':8} {trials:6d} {fmt(peer['speedup'], '8.2f')} "
                      f"{fmt(peer['vs_steps'], '8.2f')} {fmt(peer['vs_numpy'], '8.2f')} "
                      f"{peer['tuning_s']:7.0f}  MetaSchedule, {trials} trials", flush=True)
            else:
                print(f"{'tvm':8} {trials:6d}  {peer.get('skipped') or peer.get('error')}", flush=True)
            entry["tvm"] = peer
        report["kernels"][name] = entry
        _save(args.out, report)
    _save(args.out, report)
    evaluator.close()
    confirm.close()
    return 0


def comparison_times(evaluator, root, states, rounds: int) -> dict:
    """{steps: median time in seconds, None where it failed} for every state in ``states``
    (step tuples of ``root``; each distinct one timed once a round), all timed by ONE
    ``evaluator.remeasure(..., rounds, fresh=True)`` call: in a measuring child started for
    this comparison alone, in interleaved rounds."""
    unique = list(dict.fromkeys(tuple(s) for s in states))
    measured = evaluator.remeasure([(root, s) for s in unique], rounds=rounds, fresh=True)
    return {s: (statistics.median(t) if t else None) for s, t in zip(unique, measured)}


def _save(path, report) -> None:
    with open(path, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

"""Transfer of the learned Q-agent to a kernel it never saw, against random search.

Trains a ``QAgent`` on the library without the held-out kernel (real measurements on this
machine are the rewards), then searches the held-out kernel with the Q-agent and with the
``random`` agent at the same measurement budget, for several seeds, and prints the best
speedup over the untransformed kernel of each.  Every kernel is instantiated at sizes
shrunk (largest size halved) until its statement instances are at most ``--work``, so that
one measurement costs about a compile; ``--threads 1`` by default (the machine is shared:
one thread gives stable timings; pass 0 for OpenMP's default).

    python bench/qagent_transfer.py --holdout softmax --episodes 60 --budget 30 --seeds 3
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dojo_core.agents import make_agent  # noqa: E402
from dojo_core.agents.cost_model import CostModel, CostModelEvaluator  # noqa: E402
from dojo_core.agents.evaluators import LocalEvaluator  # noqa: E402
from dojo_core.agents.qagent import QAgent  # noqa: E402
from dojo_core.harness import estimated_work  # noqa: E402
from dojo_core.kernels import list_kernels, load_kernel  # noqa: E402
from dojo_core.records import RecordStore  # noqa: E402

# kernels whose C compile or reference is slow at any size, kept out of the default training
# set to keep the run within minutes on two shared cores
SLOW = {"attention", "conv2d", "depthwise_conv2d", "bmm", "avgpool2d", "maxpool2d"}


def shrunk(name: str, work: int):
    program = load_kernel(name, {})
    while estimated_work(program) > work:
        sizes = program.size_values
        biggest = max(sizes, key=lambda k: sizes[k])
        if sizes[biggest] <= 8:
            break
        program = program.with_sizes({biggest: sizes[biggest] // 2})
    return program


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--holdout", default="softmax")
    ap.add_argument("--train", nargs="*", help="training kernels (default: the library "
                    "without the held-out kernel and the slow-to-compile ones)")
    ap.add_argument("--episodes", type=int, default=60)
    ap.add_argument("--max-depth", type=int, default=6)
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--work", type=int, default=2_000_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.01)
    ap.add_argument("--weights", help="save the trained weights here (.npz); with --load, "
                    "read them instead of training")
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--store", help="measurement records file (default: a temporary one)")
    ap.add_argument("--random-macros", type=int, default=1,
                    help="the random agent draws macro moves too (its default): 1 or 0")
    ap.add_argument("--model-episodes", type=int, default=0,
                    help="after the measured episodes, this many more with rewards from a "
                    "CostModel fitted on the training measurements (cheap rollouts)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    store_path = args.store or str(Path(tempfile.mkdtemp(prefix="qagent-")) / "records.jsonl")
    evaluator = LocalEvaluator(min_time=args.min_time, threads=args.threads or None,
                               store=RecordStore(store_path))
    train = args.train or [k for k in list_kernels() if k != args.holdout and k not in SLOW]
    if args.holdout in train:
        print(f"error: the held-out kernel {args.holdout} is in the training set")
        return 2
    start = time.time()
    if args.load:
        agent = QAgent.load(args.weights)
        print(f"loaded {args.weights}")
    else:
        roots = [shrunk(k, args.work) for k in train]
        agent = QAgent(max_depth=args.max_depth, seed=0, weights=None)
        stats = agent.train(roots, lambda root: evaluator, args.episodes, seed=0,
                            log=print if args.verbose else None)
        losses = stats["losses"]
        tenth = max(1, len(losses) // 10)
        print(f"trained on {len(roots)} kernels ({', '.join(train)}): {stats['episodes']} "
              f"episodes, {stats['measurements']} measurements, {stats['updates']} updates, "
              f"{time.time() - start:.0f} s; mean TD loss first/last tenth "
              f"{statistics.fmean(losses[:tenth]):.4f} / {statistics.fmean(losses[-tenth:]):.4f}")
        if args.model_episodes:
            t0 = time.time()
            model = CostModel().fit(RecordStore(store_path))
            models = {}

            def model_evaluator(root):
                models[root.name] = CostModelEvaluator(model, base=evaluator)
                return models[root.name]
            more = agent.train(roots, model_evaluator, args.model_episodes, seed=1,
                               epsilon_start=0.5)
            print(f"cost-model rollouts: {more['episodes']} episodes, {more['measurements']} "
                  f"modelled measurements ({model.samples} states fitted), "
                  f"{time.time() - t0:.0f} s")
        if args.weights:
            agent.save(args.weights)
            print(f"weights saved to {args.weights}")
    root = shrunk(args.holdout, args.work)
    print(f"held out: {args.holdout} {root.size_values}, budget {args.budget}, "
          f"threads {args.threads or 'default'}")
    random_agent = make_agent("random", macros=bool(args.random_macros))
    rows = []
    for seed in range(args.seeds):
        row = {}
        for label, a in (("q", agent), ("random", random_agent)):
            t0 = time.time()
            result = a.search(root, evaluator, args.budget, seed=seed)
            row[label] = result.speedup
            row[label + "_steps"] = list(result.best.steps)
            row[label + "_s"] = time.time() - t0
        rows.append(row)
        print(f"seed {seed}: q {row['q']:.2f}x ({row['q_s']:.0f} s)  random {row['random']:.2f}x "
              f"({row['random_s']:.0f} s)  q best: {'; '.join(row['q_steps'])}")
    q = [r["q"] for r in rows]
    rnd = [r["random"] for r in rows]
    wins = sum(a > b for a, b in zip(q, rnd))
    print(f"{args.holdout}, budget {args.budget}, {args.seeds} seeds: best speedup "
          f"q mean {statistics.fmean(q):.2f}x (min {min(q):.2f}, max {max(q):.2f}) vs random "
          f"mean {statistics.fmean(rnd):.2f}x (min {min(rnd):.2f}, max {max(rnd):.2f}); "
          f"q ahead on {wins}/{len(q)} seeds; total {time.time() - start:.0f} s")
    evaluator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

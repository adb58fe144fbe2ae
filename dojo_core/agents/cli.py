"""``python -m dojo_core search FILE --agent NAME --budget N ...`` (DESIGN.md section 9).

Runs one agent on the kernel of FILE (at ``--size``) with a local evaluator, or through the
server (``--server URL``, candidates spread over the ``--runner`` names in parallel), and
prints one JSON object: ``SearchResult.summary()`` (``best_steps``, ``best_median_s``,
``baseline_median_s``, ``speedup``, ``measurements``, ...) plus the evaluator's
``fingerprint``.  ``--history OUT.json`` writes the search as a perfdojo-history that
``POST /api/sessions/import`` (and the gallery's import) replays.

Exit status: 0 when the search ran and the baseline was measured; 1 when the kernel is
refused (located message) or the untransformed kernel itself could not be measured (its
error on stderr, the JSON still printed); 2 for a usage error (unknown agent, a budget
below 1, ``--runner`` without ``--server``).
"""
from __future__ import annotations

import json
import sys


def add_search_parser(command, func) -> None:
    """Register ``search`` through the CLI's ``command(name, help, func)`` helper."""
    p = command("search", "run a search agent; one JSON object (best steps and times)", func)
    p.add_argument("--agent", metavar="NAME", required=True,
                   help="random, greedy, beam, mcts, ... (dojo_core.agents.AGENTS)")
    p.add_argument("--budget", metavar="N", type=int, required=True,
                   help="measurements, the baseline and cache hits included")
    p.add_argument("--seed", metavar="S", type=int, default=0)
    p.add_argument("--server", metavar="URL", help="measure through this PerfDojo server")
    p.add_argument("--runner", metavar="NAME", action="append", default=[],
                   help="a runner name or label of the server (repeatable: in parallel)")
    p.add_argument("--token", metavar="TOKEN", help="API token for the server")
    p.add_argument("--min-time", metavar="S", type=float, default=0.05,
                   help="time each state at least S seconds (default 0.05)")
    p.add_argument("--threads", metavar="T", type=int, default=None,
                   help="OpenMP threads of local measurements (default: all)")
    p.add_argument("--timeout", metavar="S", type=float, default=60,
                   help="give up one local measurement after S seconds (default 60)")
    p.add_argument("--records", metavar="FILE.jsonl", default=None,
                   help="the measurement record store (default: the default store)")
    p.add_argument("--history", metavar="OUT.json", help="write the search as a history")


def _usage(text: str) -> int:
    print(f"search: {text}", file=sys.stderr)
    return 2


def cmd_search(args) -> int:
    from ..source import parse_size_args
    from ..records import RecordStore
    from ..source import load_file
    from . import AGENTS, make_agent
    from .evaluators import LocalEvaluator
    from .server_evaluator import ServerEvaluator

    if args.agent not in AGENTS:
        return _usage(f"unknown agent {args.agent!r} (known: {', '.join(sorted(AGENTS))})")
    if args.budget < 1:
        return _usage(f"--budget {args.budget}: expected a positive integer")
    if args.runner and not args.server:
        return _usage("--runner needs --server URL")
    if args.threads is not None and args.threads < 1:
        return _usage(f"--threads {args.threads}: expected a positive integer")
    try:
        agent = make_agent(args.agent)
    except ValueError as exc:               # an agent that needs configuration it lacks
        return _usage(f"agent {args.agent!r}: {exc}")
    root = load_file(args.file, parse_size_args(args.size, args.file))
    store = RecordStore(args.records) if args.records else RecordStore()
    if args.server:
        evaluator = ServerEvaluator(args.server, args.runner or [None], min_time=args.min_time,
                                    token=args.token, store=store)
    else:
        evaluator = LocalEvaluator(min_time=args.min_time, threads=args.threads,
                                   timeout=args.timeout, store=store)
    try:
        result = agent.search(root, evaluator, args.budget, seed=args.seed)
    finally:
        if hasattr(evaluator, "close"):
            evaluator.close()
    summary = {**result.summary(), "fingerprint": evaluator.fingerprint}
    if args.history:
        with open(args.history, "w", encoding="utf-8") as f:
            json.dump(result.to_history(), f, indent=1)
        summary["history"] = args.history
    print(json.dumps(summary))
    base = result.baseline.measurement
    if not base.ok:
        print(f"{args.file}:1:1: the untransformed kernel could not be measured: {base.error}",
              file=sys.stderr)
        return 1
    return 0

"""Ranking quality of the learned cost model on held-out real measurements.

Reads a measurement records file (``records.RecordStore`` format, e.g. the one
``bench/qagent_transfer.py --store FILE`` fills), and for every kernel group (same root IR
and machine) with enough verified measurements holds out a seeded ``--holdout`` share of
its states, fits ``CostModel`` on the rest of all groups and prints Spearman and Kendall
rank correlations of predicted vs measured time on the held-out states (within each
group), with and without the code embedding.  ``--by-kernel`` also fits on all other
kernels and ranks each kernel's states (transfer to an unseen kernel).

    python bench/cost_model_quality.py RECORDS.jsonl [--holdout 0.3] [--seed 0] [--by-kernel]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dojo_core.agents.cost_model import CostModel  # noqa: E402
from dojo_core.records import RecordStore  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records")
    ap.add_argument("--holdout", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-group", type=int, default=8)
    ap.add_argument("--by-kernel", action="store_true")
    args = ap.parse_args(argv)
    groups: dict = {}
    for r in RecordStore(args.records):
        if r.get("median_s") and r.get("verified") and not r.get("error"):
            groups.setdefault((r.get("source_hash"), r.get("fingerprint")), {})[
                r.get("state_hash") or tuple(r.get("steps") or ())] = r
    groups = {k: list(v.values()) for k, v in groups.items() if len(v) >= args.min_group}
    if not groups:
        print(f"no group with {args.min_group} verified measurements in {args.records}")
        return 1
    rng = random.Random(args.seed)
    train, test = [], []
    for records in groups.values():
        records = sorted(records, key=lambda r: r.get("time") or "")
        rng.shuffle(records)
        cut = max(3, int(len(records) * args.holdout))
        test.extend(records[:cut])
        train.extend(records[cut:])
    print(f"{len(groups)} kernel groups, {len(train)} training and {len(test)} held-out states")
    for embedding in (False, True):
        model = CostModel(use_embedding=embedding).fit(train)
        q = model.rank_quality(test)
        print(f"  embedding {'on ' if embedding else 'off'}: held-out spearman {q['spearman']:.3f}"
              f"  kendall {q['kendall']:.3f}  ({q['n']} states in {q['groups']} groups)")
    if args.by_kernel:
        for key, records in sorted(groups.items(), key=lambda kv: kv[1][0].get("kernel") or ""):
            others = [r for k, rs in groups.items() if k != key for r in rs]
            q = CostModel(use_embedding=False).fit(others).rank_quality(records)
            print(f"  unseen {records[0].get('kernel')}: spearman {q['spearman']:.3f} "
                  f"kendall {q['kendall']:.3f} ({q['n']} states)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The figures and the printed table of bench/suite.py.

Owns the speedup columns (``speedup_columns``, ``speedups``: time ratios, above 1 when the
second contender is faster), their geometric means per thread count (``geomeans``), the
table (``table_columns``, ``print_table``), the errors of a row (``errors_of``) and writing
the JSON (``save``, atomic: a reader never sees half a file).

Guarantees: pure functions of the rows (a cell is a dict with ``median_s`` or ``error``, or
missing, or ``cell``: the text printed instead of a time, e.g. "not run"); a ratio or a mean
over no value is None, printed "-". The TVM peer's ratios (``tvm_columns``: ``tvm/base``,
``A/tvm``) are means over the rows where TVM ran; ``tvm_wall_s`` and ``tvm_tuning_s`` of a
thread count are sums (its subprocesses' wall time, MetaSchedule's tuning time).
"""
from __future__ import annotations

import json
import math
import os

from bench.common import fixed, ratio


def geomean(values):
    values = [v for v in values if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def time_of(cell):
    """The time a cell's ratios use: its ``figure_s`` (``suite_kernel.summarize``), else, in
    the JSON of older runs, its ``median_s``."""
    if not isinstance(cell, dict):
        return None
    return cell.get("figure_s", cell.get("median_s"))


def ms(cell, width=9) -> str:
    if not isinstance(cell, dict):
        return "-".rjust(width)
    if time_of(cell):
        return f"{time_of(cell) * 1e3:{width}.4g}"
    if cell.get("error"):
        return "ERR".rjust(width)
    return (cell.get("cell") or "-").rjust(width)


def fx(v, width=8) -> str:
    return fixed(v, width, 2)


def tvm_columns(agents) -> list:
    """The speedups involving the TVM peer: ``tvm/base`` and ``A/tvm`` per agent."""
    return ["tvm/base"] + [f"{a}/tvm" for a in agents]


def speedup_columns(agents) -> list:
    cols = ["polly/base", "numpy/base"]
    for a in agents:
        cols += [f"{a}/base", f"{a}/polly", f"{a}/numpy"]
    return cols + tvm_columns(agents)


def speedups(row, agents) -> dict:
    base, polly, npy, tvm = (time_of(row.get(k)) for k in ("baseline", "polly", "numpy", "tvm"))
    out = {"polly/base": ratio(base, polly), "numpy/base": ratio(base, npy),
           "tvm/base": ratio(base, tvm)}
    for a in agents:
        t = time_of(row["agents"].get(a))
        out[f"{a}/base"] = ratio(base, t)
        out[f"{a}/polly"] = ratio(polly, t)
        out[f"{a}/numpy"] = ratio(npy, t)
        out[f"{a}/tvm"] = ratio(tvm, t)
    return out


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
    def ratio_col(c):
        w = max(8, len(c))
        return (c, w, lambda r, c=c, w=w: fx((r.get("speedups") or {}).get(c), w),
                lambda g, t, c=c, w=w: fx(g[c]["value"], w))
    tvm_cols = tvm_columns(agents)
    cols += [ratio_col(c) for c in speedup_columns(agents) if c not in tvm_cols]
    for a in agents:
        title = f"{a}_wall_s"
        w = max(9, len(title))
        cols.append((title, w,
                     lambda r, a=a, w=w: fx((r.get("agents") or {}).get(a, {}).get("wall_s"), w),
                     lambda g, t, a=a, w=w: fx(g["agents_wall_s"][a], w)))
    cols.append(("tvm_ms", 10, lambda r: ms(r.get("tvm"), 10), None))
    cols += [ratio_col(c) for c in tvm_cols]
    cols.append(("tvm_wall_s", 10, lambda r: fx((r.get("tvm") or {}).get("wall_s"), 10),
                 lambda g, t: fx(g["tvm_wall_s"], 10)))
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
        out[str(t)]["tvm_wall_s"] = sum((r.get("tvm") or {}).get("wall_s") or 0.0 for r in mine)
        out[str(t)]["tvm_tuning_s"] = sum((r.get("tvm") or {}).get("tuning_s") or 0.0
                                          for r in mine)
    return out


def errors_of(row) -> list:
    found = []
    if row.get("error"):
        found.append(row["error"])
    for key in ("baseline", "polly", "numpy", "tvm"):
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

"""What a benchmark result says: its spread, whether it is noisy, its speedup over the root,
and where it sits under the runner's measured roofline.  One definition, used by the
editor's results table, the history tree's badges and the agents' panel.

A *measurement* here is the dict ``measurement(job)`` makes of a finished job dict.

Guarantees:

* ``assign_speedups`` gives a measurement a speedup only as the ratio of two medians
  measured in the same batch on the same runner: the root timed inside the job itself
  (``result["baseline"]``, ``python -m dojo_core bench --baseline``), else a measurement of
  the root (step 0) in the same batch on the same runner (an agent run's first state).
  A measurement of the root is its own baseline (1×).  Anything else has no speedup (None),
  never a ratio of medians from different runs.
* ``noise`` is the interquartile range over the median where the result has quartiles,
  else (max - min) over the median; ``noisy`` compares it with ``NOISY_IQR`` (or
  ``NOISY_RANGE``); the in-job baseline is judged the same way, and a noisy baseline makes
  the speedup noisy.
* ``roofline`` uses only the peaks the runner measured (``runners/peaks.py``), never a
  table of any ISA's peaks; without them it is None.
"""
from __future__ import annotations

import math

# The middle half of the repetitions spreads over more than 10% of the median: two runs of
# the same code can then differ by several percent, as much as one step usually gains, so
# such a median (and a speedup made from it) is not to be trusted without a re-run.
NOISY_IQR = 0.10
# Without quartiles (results of older runners) only min and max are known; one slow
# repetition (a page fault, a context switch) stretches that range on its own, so it is
# allowed more before the result is called noisy.
NOISY_RANGE = 0.50


def number(v):
    """``v`` as a float when it is a finite real number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _positive(v):
    v = number(v)
    return v if v is not None and v > 0 else None


def timing(d) -> dict | None:
    """The timing fields of a result (or of its ``baseline``): median_s (> 0), min_s, max_s,
    q1_s, q3_s; None without a positive median."""
    if not isinstance(d, dict) or _positive(d.get("median_s")) is None:
        return None
    return {k: number(d.get(k)) for k in ("median_s", "min_s", "max_s", "q1_s", "q3_s")}


def noise(t) -> tuple[float | None, str]:
    """(spread over the median, "iqr" or "range") of a timing; (None, "") when unknown."""
    if not t:
        return None, ""
    med = t["median_s"]
    if t.get("q1_s") is not None and t.get("q3_s") is not None:
        return max(0.0, t["q3_s"] - t["q1_s"]) / med, "iqr"
    if t.get("min_s") is not None and t.get("max_s") is not None:
        return max(0.0, t["max_s"] - t["min_s"]) / med, "range"
    return None, ""


def noisy(t) -> bool:
    """Whether a timing's spread is above the threshold of its kind (module constants)."""
    value, kind = noise(t)
    if value is None:
        return False
    return value > (NOISY_IQR if kind == "iqr" else NOISY_RANGE)


def measurement(job: dict) -> dict | None:
    """A finished job's measurement (None unless done with a positive median): job, batch,
    step, runner, timing fields, the in-job ``baseline`` timing, gflops, gbytes_per_s,
    verified, max_error, compiler, flags, threads, the runner's ``peaks``, hardware dict."""
    result = job.get("result") if isinstance(job.get("result"), dict) else None
    if job.get("state") != "done" or not result:
        return None
    t = timing(result)
    if t is None:
        return None
    runner = job.get("runner") or result.get("runner") or "?"
    if isinstance(runner, dict):
        runner = runner.get("name") or "?"
    flags = result.get("flags")
    peaks = result.get("peaks") if isinstance(result.get("peaks"), dict) else {}
    return {
        **t,
        "job": job.get("id"), "batch": job.get("batch") or "", "step": job.get("step_index"),
        "runner": str(runner),
        "baseline": timing(result.get("baseline")),
        "gflops": _positive(result.get("gflops")), "gbytes_per_s": _positive(result.get("gbytes_per_s")),
        "verified": result.get("verified") if isinstance(result.get("verified"), bool) else None,
        "verified_against": str(result.get("verified_against") or ""),
        "max_error": number(result.get("max_error")),
        "compiler": str(result.get("compiler") or ""),
        "flags": [str(f) for f in flags] if isinstance(flags, list) else [],
        "threads": result.get("threads") if isinstance(result.get("threads"), int) else None,
        "target": str(result.get("target") or ""),
        "peaks": {k: _positive(peaks.get(k)) for k in ("gflops", "gbytes_per_s")} if peaks else {},
        "hardware_dict": result.get("hardware") if isinstance(result.get("hardware"), dict) else {},
        "finished": job.get("finished"),
    }


def assign_speedups(measurements: list[dict]) -> None:
    """Set ``speedup`` and ``baseline_s`` (the root median it divides) on each measurement,
    by the rule of the module docstring; also ``noisy`` (itself or its in-job baseline)."""
    roots: dict = {}
    for m in sorted(measurements, key=lambda m: (m.get("job") is None, m.get("job") or 0)):
        if not m.get("batch"):
            continue
        key = (m["batch"], m["runner"])
        if m.get("step") == 0:
            roots.setdefault(key, m["median_s"])
        elif m.get("baseline"):
            roots.setdefault(key, m["baseline"]["median_s"])
    for m in measurements:
        if m.get("step") == 0:
            base = m["median_s"]
        elif m.get("baseline"):
            base = m["baseline"]["median_s"]
        else:
            base = roots.get((m.get("batch"), m["runner"])) if m.get("batch") else None
        m["baseline_s"] = base
        m["speedup"] = base / m["median_s"] if base else None
        m["noisy"] = noisy(m) or noisy(m.get("baseline"))


def roofline(m: dict) -> dict | None:
    """Where a measurement sits under its runner's measured roofline: {"intensity" (flops per
    byte), "gflops", "gbytes_per_s", "flops_share" (of the FMA peak), "bw_share" (of the
    bandwidth peak), "roof_share" (of the roof at that intensity), "peak_gflops",
    "peak_gbytes_per_s"}; None without both the kernel's work and the runner's peaks."""
    peaks = m.get("peaks") or {}
    pf, pb = peaks.get("gflops"), peaks.get("gbytes_per_s")
    gf, gb = m.get("gflops"), m.get("gbytes_per_s")
    if not (pf and pb and gf and gb):
        return None
    intensity = gf / gb
    roof = min(pf, intensity * pb)
    return {"intensity": intensity, "gflops": gf, "gbytes_per_s": gb, "flops_share": gf / pf,
            "bw_share": gb / pb, "roof_share": gf / roof, "peak_gflops": pf, "peak_gbytes_per_s": pb}


def fmt_speedup(s) -> str:
    """"2.87×", or "" for None: how every page writes a speedup."""
    return f"{s:.2f}×" if s else ""

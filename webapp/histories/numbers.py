"""How a measurement is written on the page: the results table's row, the viewed step's
result card, the roofline's dots.  Pure functions of measurements (``integration.measurement``
after ``integration.with_speedups``); the meaning of speedup, noise and peak shares is
``webapp.runners.results``'s, never redefined here.

Guarantees: every number has its unit; a speedup names the baseline it divides (the root
timed in the same job, or in the same batch); a noisy measurement says by how much and
against which threshold; a share of peak is given only against the runner's measured peaks.
"""
from __future__ import annotations

from dojo_core import DojoError, parse
from webapp.runners import results as rr
from webapp.runners.services import gpu_binds

from .present import fmt_time


def fmt_share(x) -> str:
    """A fraction as a percentage ("31%", "0.4%"), "" for None."""
    if x is None:
        return ""
    pct = 100 * x
    return f"{pct:.1f}%" if pct < 10 else f"{pct:.0f}%"


def compiler_short(text: str) -> str:
    """``cc (Debian 12.2.0-14+deb12u1) 12.2.0`` -> ``cc 12.2.0``; other texts unchanged."""
    words = (text or "").split()
    if len(words) >= 2 and "(" in text:
        return f"{words[0]} {words[-1]}"
    return text or ""


def noise_text(t) -> str:
    """"IQR 3.1%" or "range 48%" of a timing (``results.noise``), "" when unknown."""
    value, kind = rr.noise(t)
    if value is None:
        return ""
    return f"{'IQR' if kind == 'iqr' else 'range'} {fmt_share(value)}"


def noise_limit(t) -> str:
    """The threshold a timing's noise is judged by ("10%" for an IQR)."""
    _, kind = rr.noise(t)
    return fmt_share(rr.NOISY_IQR if kind == "iqr" else rr.NOISY_RANGE)


def baseline_text(m: dict) -> str:
    """What the speedup divides, in words."""
    if m.get("step") == 0:
        return "the root itself"
    if m.get("baseline"):
        return f"root {fmt_time(m['baseline']['median_s'])}, timed in the same job"
    if m.get("baseline_s"):
        return f"root {fmt_time(m['baseline_s'])}, timed in the same batch ({m.get('batch')})"
    return "no root measured in the same batch on this runner"


def row(m: dict, index: int, text: str) -> dict:
    """The results table's row (and the result card's content) of one measurement."""
    roof = rr.roofline(m)
    peaks = m.get("peaks") or {}
    return {
        "index": index, "text": text, "runner": m["runner"], "job": m.get("job"),
        "median": fmt_time(m["median_s"]), "min": fmt_time(m.get("min_s")), "max": fmt_time(m.get("max_s")),
        "q1": fmt_time(m.get("q1_s")), "q3": fmt_time(m.get("q3_s")),
        "spread": noise_text(m), "noisy": bool(m.get("noisy")), "noise_limit": noise_limit(m),
        "baseline_noisy": rr.noisy(m.get("baseline")),
        "bar": spread_bar(m),
        "speedup": rr.fmt_speedup(m.get("speedup")), "baseline": baseline_text(m),
        "gflops": f"{m['gflops']:.1f}" if m.get("gflops") else "",
        "gbps": f"{m['gbytes_per_s']:.1f}" if m.get("gbytes_per_s") else "",
        "flops_share": fmt_share(roof["flops_share"]) if roof else "",
        "over_peak": bool(roof and roof["flops_share"] > 1),
        "bw_share": fmt_share(roof["bw_share"]) if roof else "",
        "roof_share": fmt_share(roof["roof_share"]) if roof else "",
        "intensity": f"{roof['intensity']:.2f}" if roof else "",
        "peaks": (f"{peaks['gflops']:.0f} GFLOP/s FMA, {peaks['gbytes_per_s']:.1f} GB/s triad"
                  if peaks.get("gflops") and peaks.get("gbytes_per_s") else ""),
        "compiler": compiler_short(m.get("compiler") or ""), "compiler_full": m.get("compiler") or "",
        "flags": " ".join(f for f in m.get("flags") or [] if f not in ("-shared", "-fPIC")),
        "threads": m.get("threads") or "",
        "verified": ("verified" if m.get("verified") else "not verified") if m.get("verified") is not None else "",
        "verified_against": m.get("verified_against") or "",
        "max_error": f"{m['max_error']:.2g}× tol" if m.get("max_error") is not None else "",
        "hardware": m.get("hardware") or "",
    }


def spread_bar(m: dict, width: int = 80) -> dict | None:
    """A box plot's positions (px): min, q1, median, q3 and max on a scale from 0 to twice the
    median (to q3 when higher, to max when lower); a max beyond the scale is drawn at its end with
    ``clipped`` set.  None without min and max.  The scale starts at 0, so a wide box is a
    wide spread relative to the median."""
    top, med = m.get("max_s"), m["median_s"]
    if not top or m.get("min_s") is None:
        return None
    scale = min(top, max(2 * med, m.get("q3_s") or 0.0))

    def x(v):
        return round(width * min(v, scale) / scale, 1) if v is not None else None

    q1, q3 = x(m.get("q1_s")), x(m.get("q3_s"))
    return {"min": x(m["min_s"]), "max": x(top), "median": x(med), "clipped": top > scale,
            "q1": q1, "q3": q3, "box": (q3 - q1) if q1 is not None and q3 is not None else None,
            "width": width}


def step_rows(results: dict, steps: dict, index: int) -> list[dict]:
    """The rows of step ``index``: its best measurement per runner, by runner name."""
    entry = results.get(index) or {}
    if index not in steps:
        return []
    text = steps[index].text or "(root)"
    return [row(m, index, text) for _, m in sorted(entry.get("by_runner", {}).items())]


def gpu_binds_of(ir_text: str) -> list[str]:
    """The gpu binds of a step's stored IR (``runners.services.gpu_binds``); [] if it does not parse.
    A bind is printed as its ``gpu.AXIS`` annotation, so IR without that text is not parsed."""
    if "gpu." not in ir_text:
        return []
    try:
        return gpu_binds(parse(ir_text, "<step>"))
    except (DojoError, RecursionError):
        return []


def roofline_points(results: dict, steps: dict) -> dict:
    """{runner: {"peaks": (gflops, gbytes_per_s), "points": [(step, intensity, gflops)]}} of
    every best measurement with a roofline position (``results.roofline``)."""
    out: dict = {}
    for index in sorted(results):
        if index not in steps:
            continue
        for runner, m in sorted(results[index].get("by_runner", {}).items()):
            roof = rr.roofline(m)
            if roof is None:
                continue
            entry = out.setdefault(runner, {"peaks": (roof["peak_gflops"], roof["peak_gbytes_per_s"]),
                                            "points": []})
            entry["points"].append((index, roof["intensity"], roof["gflops"]))
    return out

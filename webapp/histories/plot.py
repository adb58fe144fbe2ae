"""Small server-rendered SVG plots (no JavaScript, no library): speedup over steps, and a roofline.

They carry no colour of their own: every mark has a class (``frame``, ``grid``, ``tick``,
``axis-title``, ``baseline``, ``roof``, ``roof-label``, ``series sN``) that static/css/dojo.css
colours from the theme's variables, so the plots follow the light and the dark theme."""
from __future__ import annotations

import math
from html import escape

SERIES = 7          # series colours s0..s6 (the CSS variables --series-0..6)


def speedup_svg(series: dict, width: int = 560, height: int = 220, path=None) -> str:
    """series: {runner: [(step index, speedup), ...]} -> an <svg> string ("" if no points).

    Each runner's line joins only the measured steps of ``path`` (the indices from the root
    to the viewed step), in path order, so steps of different branches are never joined;
    every dot carries its ``data-step`` and ``data-runner``."""
    points = [(x, y) for pts in series.values() for x, y in pts if y is not None and y > 0]
    if not points:
        return ""
    left, right, top, bottom = 48, 12, 14, 34
    xs = sorted({x for x, _ in points})
    xmax = max(xs) if xs else 1
    xmin = min(xs)
    if xmax == xmin:
        xmax = xmin + 1
    ymax = max(1.0, max(y for _, y in points)) * 1.1
    ymin = 0.0
    pw, ph = width - left - right, height - top - bottom

    def sx(x):
        return left + (x - xmin) / (xmax - xmin) * pw

    def sy(y):
        return top + ph - (y - ymin) / (ymax - ymin) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-label="speedup over steps">',
           f'<rect class="frame" x="{left}" y="{top}" width="{pw}" height="{ph}"/>']
    # y grid and labels
    step = _nice_step(ymax / 4)
    v = 0.0
    while v <= ymax + 1e-9:
        y = sy(v)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" class="tick">{v:g}×</text>')
        v += step
    # the 1x baseline
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{sy(1):.1f}" y2="{sy(1):.1f}" class="baseline" '
               f'stroke-dasharray="4 3"/>')
    # x labels (at most ~12)
    stride = max(1, len(xs) // 12 + (1 if len(xs) % 12 else 0))
    for x in xs[::stride]:
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 14}" text-anchor="middle" font-size="11" class="tick">{x}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 4}" text-anchor="middle" font-size="11" class="axis-title">step</text>')
    out.append(f'<text x="12" y="{top + ph / 2:.1f}" font-size="11" class="axis-title" '
               f'transform="rotate(-90 12 {top + ph / 2:.1f})" text-anchor="middle">speedup</text>')
    for k, (runner, pts) in enumerate(sorted(series.items())):
        series = f"series s{k % SERIES}"
        pts = sorted((x, y) for x, y in pts if y is not None and y > 0)
        # one line per runner, along one branch only: the steps of ``path`` in its order
        # (without a path the page's script draws the viewed branch from the dots' data-step)
        order = {i: n for n, i in enumerate(path or [])}
        line = sorted(((x, y) for x, y in pts if x in order), key=lambda p: order[p[0]])
        joined = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in line) if len(line) > 1 else ""
        out.append(f'<polyline class="branch-line {series}" data-runner="{escape(runner)}" points="{joined}" '
                   f'fill="none" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" class="{series}" data-step="{x}" '
                       f'data-runner="{escape(runner)}"><title>{escape(runner)}: step {x}, {y:.2f}×</title></circle>')
        out.append(f'<text x="{left + 8}" y="{top + 14 + 14 * k}" font-size="11" class="legend {series}">'
                   f'■ {escape(runner)}</text>')
    out.append("</svg>")
    return "".join(out)


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def roofline_svg(runner: str, peaks: tuple, points: list, width: int = 320, height: int = 220) -> str:
    """A log-log roofline of one runner: its measured bandwidth roof (GB/s x flops per byte)
    and FMA roof (GFLOP/s), and a dot per (step, intensity, gflops) point; "" without points
    or peaks.  Each dot's <title> names its step, intensity and GFLOP/s."""
    peak_f, peak_b = peaks
    pts = [(i, x, y) for i, x, y in points if x and y and x > 0 and y > 0]
    if not pts or not peak_f or not peak_b:
        return ""
    ridge = peak_f / peak_b
    xs = [x for _, x, _ in pts] + [ridge]
    xlo, xhi = math.log10(min(xs) / 4), math.log10(max(xs) * 4)
    ylo = math.log10(min(min(y for _, _, y in pts), peak_b * 10 ** xlo) / 2)
    yhi = math.log10(peak_f * 2)
    left, right, top, bottom = 44, 10, 12, 30
    pw, ph = width - left - right, height - top - bottom

    def sx(v):
        return left + (math.log10(v) - xlo) / (xhi - xlo) * pw

    def sy(v):
        return top + ph - (math.log10(v) - ylo) / (yhi - ylo) * ph

    x0 = 10 ** xlo
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot roofline" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-label="roofline of {escape(runner)}">',
           f'<rect class="frame" x="{left}" y="{top}" width="{pw}" height="{ph}"/>']
    for p in range(math.ceil(ylo), math.floor(yhi) + 1):
        out.append(f'<text x="{left - 4}" y="{sy(10 ** p) + 4:.1f}" text-anchor="end" font-size="10" '
                   f'class="tick">{10 ** p:g}</text>')
    for p in range(math.ceil(xlo), math.floor(xhi) + 1):
        out.append(f'<text x="{sx(10 ** p):.1f}" y="{top + ph + 12}" text-anchor="middle" font-size="10" '
                   f'class="tick">{10 ** p:g}</text>')
    out.append(f'<polyline class="roof" points="{sx(x0):.1f},{sy(x0 * peak_b):.1f} {sx(ridge):.1f},'
               f'{sy(peak_f):.1f} {sx(10 ** xhi):.1f},{sy(peak_f):.1f}" fill="none" '
               f'stroke-width="1.5"><title>roof: {peak_b:.1f} GB/s (triad), {peak_f:.0f} GFLOP/s (FMA), '
               f'both measured on {escape(runner)}</title></polyline>')
    out.append(f'<text x="{left + pw - 2}" y="{sy(peak_f) - 4:.1f}" text-anchor="end" font-size="10" '
               f'class="roof-label">{peak_f:.0f} GFLOP/s</text>')
    out.append(f'<text x="{sx(x0) + 4:.1f}" y="{sy(x0 * peak_b) - 6:.1f}" font-size="10" '
               f'class="roof-label">{peak_b:.1f} GB/s</text>')
    for index, x, y in pts:
        out.append(f'<circle class="dot series s0" data-step="{index}" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5">'
                   f'<title>step {index}: {x:.2f} flop/byte, {y:.1f} GFLOP/s</title></circle>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 4}" text-anchor="middle" font-size="10" '
               f'class="axis-title">flop per byte</text>')
    out.append(f'<text x="10" y="{top + ph / 2:.1f}" font-size="10" class="axis-title" '
               f'transform="rotate(-90 10 {top + ph / 2:.1f})" text-anchor="middle">GFLOP/s</text>')
    out.append("</svg>")
    return "".join(out)

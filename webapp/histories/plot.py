"""A small server-rendered SVG plot of speedup over steps (no JavaScript, no library)."""
from __future__ import annotations

import math
from html import escape

COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"]


def speedup_svg(series: dict, width: int = 560, height: int = 220) -> str:
    """series: {runner: [(step index, speedup), ...]} -> an <svg> string ("" if no points)."""
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
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ddd"/>']
    # y grid and labels
    step = _nice_step(ymax / 4)
    v = 0.0
    while v <= ymax + 1e-9:
        y = sy(v)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#555">{v:g}×</text>')
        v += step
    # the 1x baseline
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{sy(1):.1f}" y2="{sy(1):.1f}" stroke="#999" '
               f'stroke-dasharray="4 3"/>')
    # x labels (at most ~12)
    stride = max(1, len(xs) // 12 + (1 if len(xs) % 12 else 0))
    for x in xs[::stride]:
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 14}" text-anchor="middle" font-size="11" fill="#555">{x}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 4}" text-anchor="middle" font-size="11" fill="#333">step</text>')
    out.append(f'<text x="12" y="{top + ph / 2:.1f}" font-size="11" fill="#333" '
               f'transform="rotate(-90 12 {top + ph / 2:.1f})" text-anchor="middle">speedup</text>')
    for k, (runner, pts) in enumerate(sorted(series.items())):
        color = COLORS[k % len(COLORS)]
        pts = sorted((x, y) for x, y in pts if y is not None and y > 0)
        if len(pts) > 1:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{color}">'
                       f'<title>{escape(runner)}: step {x}, {y:.2f}×</title></circle>')
        out.append(f'<text x="{left + 8}" y="{top + 14 + 14 * k}" font-size="11" fill="{color}">'
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

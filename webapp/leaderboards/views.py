"""Leaderboard pages and the library endpoints (thin: queries.py and dojo_core.library).

    GET /kernels/NAME/                     the kernel's leaderboards and the library button
    GET /api/kernels/NAME/leaderboard      {"kernel", "boards": [...]}            (404 unknown)
    GET /api/library/records[?target=T]    {"records": [records.py format], "runners": [...]}
    GET /api/library?target=T[&kernels=a,b]   the library as a .tar.gz (400 {"error"} refused)
    GET /library/download?target=T         the same, for the page's button

Every refusal of the API is a 4xx with {"error": reason}; the download button gets the
same reason on a small page.
"""
from __future__ import annotations

import io
import re
import tarfile
import tempfile
from pathlib import Path

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dojo_core import kernels as library
from dojo_core.library import LibraryError, RunnerInfo, build_library, record_fingerprint, resolve_target
from webapp.jsonapi import error, json_view

from . import queries

_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def _kernel_or_none(name: str):
    try:
        library.kernel_path(name)
        return library.info(name)
    except KeyError:
        return None


def _board_json(board: dict) -> dict:
    return {**board, "entries": [{k: v for k, v in e.items()} for e in board["entries"]]}


@json_view("GET", csrf_exempt=False)
def api_leaderboard(request, name):
    if _kernel_or_none(name) is None:
        return error(404, f"no library kernel named {name!r}")
    return JsonResponse({"kernel": name, "boards": [_board_json(b) for b in queries.leaderboards(name)]})


@json_view("GET", csrf_exempt=False)
def api_records(request):
    site = request.build_absolute_uri("/").rstrip("/")
    records, runners = queries.verified_records(site=site), queries.runner_infos()
    target = request.GET.get("target")
    if target:
        infos = [RunnerInfo(r["name"], r["labels"], r["fingerprint"]) for r in runners]
        try:
            fps = resolve_target(target, records, infos)
        except LibraryError as exc:
            return error(400, str(exc))
        records = [r for r in records if record_fingerprint(r) in fps]
    return JsonResponse({"target": target or None, "records": records, "runners": runners})


def build_archive(target: str, kernels=None):
    """(file name, .tar.gz bytes) of the library of a target, built by dojo_core.library from
    the verified jobs; LibraryError when refused."""
    records = queries.verified_records()
    runners = [RunnerInfo(r["name"], r["labels"], r["fingerprint"]) for r in queries.runner_infos()]
    stem = "perfdojo-library-" + (_SAFE_NAME.sub("-", target).strip("-") or "target")
    with tempfile.TemporaryDirectory(prefix="dojo-library-") as tmp:
        out = Path(tmp) / stem
        build_library(out, target, records, runners=runners, kernels=kernels, replay=False)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(out, arcname=stem)
    return f"{stem}.tar.gz", buf.getvalue()


def _archive_response(request, as_json: bool):
    target = (request.GET.get("target") or "").strip()
    kernels = [k for k in (request.GET.get("kernels") or "").split(",") if k.strip()] or None
    if not target:
        reason = "target: a runner name, a label, a fingerprint or 'local' is required"
    else:
        try:
            name, data = build_archive(target, set(kernels) if kernels else None)
        except LibraryError as exc:
            reason = str(exc)
        else:
            response = HttpResponse(data, content_type="application/gzip")
            response["Content-Disposition"] = f'attachment; filename="{name}"'
            return response
    if as_json:
        return error(400, reason)
    return render(request, "leaderboards/refused.html", {"reason": reason, "target": target},
                  status=400)


@json_view("GET", csrf_exempt=False)
def api_library(request):
    return _archive_response(request, as_json=True)


@require_GET
def library_download(request):
    return _archive_response(request, as_json=False)


def kernel_page(request, name):
    entry = _kernel_or_none(name)
    if entry is None:
        return render(request, "leaderboards/refused.html",
                      {"reason": f"no library kernel named {name!r}"}, status=404)
    boards = queries.leaderboards(name)
    for board in boards:
        board["sizes_text"] = ", ".join(f"{k}={v}" for k, v in board["sizes"].items())
        for e in board["entries"]:
            e["time_text"] = _fmt_time(e["median_s"])
    return render(request, "leaderboards/kernel.html", {
        "kernel": name, "entry": entry, "sizes": library.load_kernel(name).size_values,
        "boards": boards, "best": queries.best_known(boards).get(name, []),
        "targets": queries.targets()})


def _fmt_time(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"

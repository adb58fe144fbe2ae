"""The pages: the gallery, the editor of a history, compare, runners, accounts.

Server-rendered; htmx swaps partials where JavaScript is on, and every control is
also a plain link or form that works without it.  Only owners change a history
(services.require_owner); others see a Fork button.
"""
from __future__ import annotations

import logging
import time
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login as auth_login
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.views import LoginView
from django.http import Http404, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from . import engine, integration, services
from .actors import browser_actor, ensure_session_key, remember_owned
from .plot import speedup_svg
from .services import OWNED_KEY, Refusal

log = logging.getLogger(__name__)

DIFF_MODES = ("split", "unified")
CODE_TABS = {"ir": ("IR", "dojo"), "c": ("C", "c"), "cuda": ("CUDA", "cuda")}
# single-loop probes: why a transformation is not legal at a loop or statement
LOOP_PROBES = ("parallelize {r}", "vectorize {r}", "unroll {r}", "split {r} by 2")
STMT_PROBES = ("hoist {r}",)


# ============================================================================ helpers

def _actor(request):
    return browser_actor(request)


def _refused(request, r: Refusal, template="histories/refused.html"):
    if request.headers.get("HX-Request"):
        resp = HttpResponse(f'<p class="error" role="alert">{_esc(r.reason)}</p>', status=r.status)
        resp["HX-Retarget"] = "#flash"
        resp["HX-Reswap"] = "innerHTML"
        return resp
    return render(request, template, {"status": r.status, "reason": r.reason}, status=r.status)


def _esc(text: str) -> str:
    from html import escape
    return escape(text)


def _session_or_404(sid):
    try:
        return services.get_session(sid)
    except Refusal as r:
        raise Http404(r.reason) from None


def _int_param(request, name, default=None):
    raw = request.GET.get(name, request.POST.get(name))
    if raw in (None, ""):
        return default
    try:
        return services.parse_index(raw, name)
    except Refusal:
        return default


def _fmt_time(s):
    if s is None:
        return ""
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def _range(m) -> str:
    """The spread of a measurement: its fastest and slowest repetition."""
    if m.get("min_s") is None or m.get("max_s") is None:
        return ""
    return f"{_fmt_time(m['min_s'])} … {_fmt_time(m['max_s'])}"


def _fmt_flops(n):
    if n is None:
        return "—"
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} FLOP"


# ============================================================================ gallery

def kernel_cards(with_results: bool = True) -> list:
    """One dict per library kernel: name, title, category, sizes, flops, best speedup."""
    from webapp.views import library_kernels       # never fails: [] if the library is broken
    names = library_kernels()
    best = best_speedups() if with_results and names else {}
    cards = []
    for name in names:
        card = {"name": name, "title": "", "category": "", "sizes": {}, "flops": None, "flops_text": "—",
                "has_steps": False, "best": best.get(name)}
        try:
            from dojo_core import kernels
            program = kernels.load_kernel(name)
            card["sizes"] = program.size_values
            entry = kernels.info(name)
            card["title"], card["category"] = entry.title, entry.category
            if entry.flops is not None:
                card["flops"] = int(entry.flops(program.size_values))
                card["flops_text"] = _fmt_flops(card["flops"])
            card["has_steps"] = kernels.steps_path(name) is not None
        except Exception:                                    # noqa: BLE001 - show what we have
            log.warning("kernel %s: no catalog entry", name, exc_info=True)
        cards.append(card)
    return cards


def best_speedups() -> dict:
    """{kernel: best measured speedup over its root (same session, same runner)}."""
    if not integration.available():
        return {}
    try:
        from webapp.runners.models import Job
        from .models import Session
        rows = list(Job.objects.filter(state="done", session_id__isnull=False)
                    .select_related("runner").order_by("-id")[:5000])
        if not rows:
            return {}
        from webapp.runners.services import job_dict
        by_session = {}
        for job in rows:
            by_session.setdefault(job.session_id, []).append(job_dict(job))
        kernels = dict(Session.objects.filter(id__in=list(by_session)).values_list("id", "kernel"))
        best = {}
        for sid, jobs in by_session.items():
            name = kernels.get(sid)
            if not name:
                continue
            results = integration.with_speedups(integration.results_by_step(jobs))
            for index, entry in results.items():
                for m in entry["by_runner"].values():
                    if index and m.get("speedup") and (name not in best or m["speedup"] > best[name]["speedup"]):
                        best[name] = {"speedup": m["speedup"], "runner": m["runner"], "hardware": m["hardware"],
                                      "session": sid, "step": index}
        return best
    except Exception:                                        # noqa: BLE001 - the gallery must not 500
        log.warning("cannot compute best speedups", exc_info=True)
        return {}


def gallery(request, paste_error=None, source="", status=200):
    ctx = {"cards": kernel_cards(), "paste": _paste_context(source, paste_error)}
    ctx["kernels"] = [c["name"] for c in ctx["cards"]]
    ctx["my_sessions"] = _my_sessions(request)
    return render(request, "home.html", ctx, status=status)


def _my_sessions(request, limit=12):
    from .models import Session
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        qs = Session.objects.filter(owner=user)
    else:
        ids = [x for x in request.session.get(OWNED_KEY, []) if isinstance(x, str)]
        if not ids:
            return []
        qs = Session.objects.filter(id__in=ids, owner__isnull=True)
    return list(qs.order_by("-updated")[:limit])


def _paste_context(source: str, error: Refusal | None) -> dict:
    """The pasted source with the checker's messages attached to their lines."""
    if error is None:
        return {"source": source, "errors": [], "lines": []}
    errors = error.extra.get("errors") or []
    by_line = {}
    for e in errors:
        by_line.setdefault(e["line"], []).append(e)
    lines = []
    for no, text in enumerate(source.replace("\r\n", "\n").split("\n"), start=1):
        lines.append({"no": no, "text": text, "errors": by_line.get(no, [])})
    # errors past the end (e.g. at EOF)
    n = len(lines)
    for line_no, errs in by_line.items():
        if line_no > n:
            lines.append({"no": line_no, "text": "", "errors": errs})
    return {"source": source, "message": error.reason, "errors": errors,
            "lines": lines if errors else []}


@require_POST
def new_session(request):
    """Start a session from a library kernel (kernel=NAME) or from pasted IR (source=TEXT)."""
    kernel = request.POST.get("kernel") or None
    source = request.POST.get("source")
    if kernel is None and source is None:
        return _refused(request, Refusal(400, "give a kernel name or IR source"))
    sizes = {}
    for key, value in request.POST.items():
        if key.startswith("size_") and kernel is not None:
            if not value.strip().isdigit() or len(value.strip()) > 9:
                return _refused(request, Refusal(400, f"size {key[5:]} must be a positive integer, not {value[:20]!r}"))
            sizes[key[5:]] = int(value)
    actor = _actor(request)
    if actor.user_id is None:
        actor.session_key = ensure_session_key(request)
    try:
        session, _token = services.create_session(actor, kernel=kernel, source=source if kernel is None else None,
                                                   sizes=sizes or None)
    except Refusal as r:
        if kernel is not None:
            return _refused(request, r)
        if request.headers.get("HX-Request"):
            return render(request, "histories/_paste.html", {"paste": _paste_context(source, r)}, status=r.status)
        return gallery(request, paste_error=r, source=source, status=r.status)
    if actor.user_id is None:
        remember_owned(request, session.id)
    url = session.url
    if request.headers.get("HX-Request"):
        resp = HttpResponse(status=204)
        resp["HX-Redirect"] = url
        return resp
    return redirect(url)


@require_POST
def import_session(request):
    """Import an exported history (a JSON file upload or pasted JSON)."""
    import json
    upload = request.FILES.get("file")
    raw = upload.read(8 * 1024 * 1024 + 1) if upload else (request.POST.get("json") or "").encode()
    try:
        if len(raw) > 8 * 1024 * 1024:
            raise Refusal(413, "history file too large")
        try:
            data = json.loads(raw or b"null")
        except RecursionError:
            raise Refusal(400, "not a JSON history: nested too deeply") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise Refusal(400, f"not a JSON history: {exc}") from None
        actor = _actor(request)
        if actor.user_id is None:
            actor.session_key = ensure_session_key(request)
        session, _token, warnings = services.import_history(actor, data)
    except Refusal as r:
        return _refused(request, r)
    if actor.user_id is None:
        remember_owned(request, session.id)
    for w in warnings:
        messages.warning(request, w)
    return redirect(session.url)


# ============================================================================ the editor

def _tree(steps: dict, current: int, viewed: int, results: dict) -> list:
    """Nested items: a chain of single children stays at one level; other children of a
    branching step are nested lists under it.  The main line follows the viewed step."""
    children = {}
    for s in steps.values():
        if s.parent is not None:
            children.setdefault(s.parent, []).append(s.index)
    on_path = set()
    try:
        on_path = set(services.path_indices(steps, viewed))
    except Refusal:
        pass

    def item(index):
        step = steps[index]
        r = results.get(index, {})
        best = r.get("best")
        return {"step": step, "index": index, "text": step.text or "(root)", "current": index == current,
                "viewed": index == viewed, "on_path": index in on_path, "branches": [],
                "best": best, "best_time": _fmt_time(best["median_s"]) if best else "",
                "speedup": r.get("best_speedup"), "pending": any(
                    j.get("state") in ("queued", "running") for j in r.get("jobs", []))}

    def line(start):
        out = []
        index = start
        while index is not None:
            it = item(index)
            out.append(it)
            kids = sorted(children.get(index, []))
            if not kids:
                break
            main = next((k for k in kids if k in on_path), kids[0])
            it["branches"] = [line(k) for k in kids if k != main]
            index = main
        return out

    return line(0)


def _ir_lines(ir_text: str, program=None) -> list:
    """The highlighted lines of an IR text; loop headers and statements carry their ref.
    With the replayed ``program`` (whose canonical text ir_text is) no parse is needed."""
    if program is not None and engine.print_text(program) == ir_text:
        refs = engine.program_line_refs(program)
    else:
        refs = engine.line_refs(ir_text)
    lines = []
    for no, html in enumerate(engine.highlighted(ir_text, "dojo"), start=1):
        ref = refs.get(no)
        kind = None
        if ref is not None:
            kind = engine.ref_kind(ref)
        lines.append({"no": no, "html": html, "ref": ref if kind == "statement" or kind == "loop" else None,
                      "kind": kind})
    return lines


def _actions_context(session, steps, index, at, editable, error=None, tried="", defer=False):
    """Actions at step ``index``: grouped by kind (only those naming ``at`` when given),
    and at a loop/statement the reasons some one-loop transformations are not legal.
    ``defer``: only a placeholder that loads them (htmx) once the page is updated."""
    from dojo_core.transforms import explain
    ctx = {"session": session, "index": index, "at": at or "", "editable": editable, "groups": [],
           "not_legal": [], "error": error, "tried": tried, "count": 0, "replay_error": None,
           "deferred": defer and not at and not error}
    if ctx["deferred"]:
        return ctx
    try:
        program = services.program_at(session, index, steps)
    except Refusal as r:
        ctx["replay_error"] = r.reason
        return ctx
    found = engine.actions_of(program)
    if at:
        found = [a for a in found if at in engine.refs_in(a.text)]
    groups = {}
    for a in found:
        groups.setdefault(a.kind, []).append(a.text)
    ctx["groups"] = [{"kind": k, "actions": v} for k, v in groups.items()]
    ctx["count"] = len(found)
    if at:
        probes = STMT_PROBES if engine.ref_kind(at) == "statement" else LOOP_PROBES
        legal = {a.text for a in found}
        for probe in probes:
            text = probe.format(r=at)
            if text in legal:
                continue
            reason = explain(program, text)
            if reason:
                ctx["not_legal"].append({"text": text, "reason": reason})
        ctx["kind"] = engine.ref_kind(at)
    return ctx


def _diff_context(session, steps, a, b, code="ir", mode="split"):
    """The diff of one code view between steps a and b."""
    code = code if code in CODE_TABS else "ir"
    mode = mode if mode in DIFF_MODES else "split"
    ctx = {"session": session, "a": a, "b": b, "code": code, "mode": mode, "tabs": [], "rows": [],
           "error": None, "same": False, "label": CODE_TABS[code][0]}
    for key, (label, _) in CODE_TABS.items():
        ctx["tabs"].append({"key": key, "label": label, "active": key == code})
    if a is None:
        ctx["error"] = "the root has no parent to compare with; apply an action or compare two steps"
        return ctx
    if code == "ir":
        ta, tb = steps[a].ir, steps[b].ir
    else:
        try:
            pa = services.program_at(session, a, steps)
            pb = services.program_at(session, b, steps)
        except Refusal as r:
            ctx["error"] = r.reason
            return ctx
        ta, why_a = engine.generated(pa, code)
        tb, why_b = engine.generated(pb, code)
        if ta is None or tb is None:
            ctx["error"] = why_a or why_b
            return ctx
    language = CODE_TABS[code][1]
    added, removed = engine.diff_stats(ta, tb)
    ctx["added"], ctx["removed"] = added, removed
    name_a = f"step {a}"
    name_b = f"step {b}"
    if mode == "split":
        ctx["rows"] = engine.split_rows(ta, tb, language)
    else:
        ctx["rows"] = engine.unified_rows(ta, tb, name_a, name_b, language)
    ctx["same"] = not ctx["rows"]
    return ctx


def _bench_context(session, steps, results, jobs, viewed, editable):
    runners = integration.runners()
    rows = []
    series = {}
    for index in sorted(results):
        if index not in steps:
            continue
        entry = results[index]
        for runner, m in sorted(entry["by_runner"].items()):
            rows.append({"index": index, "text": steps[index].text or "(root)", "runner": runner,
                         "median": _fmt_time(m["median_s"]), "spread": _range(m),
                         "min": _fmt_time(m.get("min_s")), "max": _fmt_time(m.get("max_s")),
                         "gflops": f"{m['gflops']:.1f}" if m.get("gflops") else "",
                         "speedup": f"{m['speedup']:.2f}×" if m.get("speedup") else "—",
                         "hardware": m["hardware"], "job": m["job"]})
            if m.get("speedup"):
                series.setdefault(runner, []).append((index, m["speedup"]))
    # the cross-hardware view: one column per runner
    runner_names = sorted({r["runner"] for r in rows})
    cross = []
    for index in sorted(results):
        if index not in steps or not results[index]["by_runner"]:
            continue
        cells = []
        for name in runner_names:
            m = results[index]["by_runner"].get(name)
            cells.append({"median": _fmt_time(m["median_s"]) if m else "",
                          "speedup": f"{m['speedup']:.2f}×" if m and m.get("speedup") else ""})
        cross.append({"index": index, "text": steps[index].text or "(root)", "cells": cells})
    return {"session": session, "available": integration.available(), "not_available": integration.NOT_AVAILABLE,
            "runners": runners, "online": [r for r in runners if r.get("online")],
            "jobs": [_job_view(j) for j in reversed(jobs[-20:])], "rows": rows, "cross": cross,
            "runner_names": runner_names, "plot": speedup_svg(series), "viewed": viewed, "editable": editable}


def _job_view(job: dict) -> dict:
    m = integration.measurement(job)
    result = job.get("result") if isinstance(job.get("result"), dict) else {}
    return {"id": job.get("id"), "state": job.get("state") or "?", "step": job.get("step_index"),
            "runner": job.get("runner") or (result or {}).get("runner") or job.get("requested_runner") or "any",
            "median": _fmt_time(m["median_s"]) if m else "", "spread": _range(m) if m else "",
            "error": job.get("error") or (result.get("error") if result else None) or "",
            "verdict": (result or {}).get("verdict") if job.get("state") == "done" else "",
            "final": job.get("final", job.get("state") in ("done", "failed", "lost", "cancelled"))}


def _replayed(session, steps, index):
    try:
        return services.program_at(session, index, steps)
    except Refusal:
        return None


def editor_context(request, session, viewed=None, at=None, code="ir", mode="split", error=None, tried="",
                   defer_actions=False, steps=None):
    steps = steps if steps is not None else services.steps_of(session)
    if viewed is None or viewed not in steps:
        viewed = session.current if session.current in steps else 0
    actor = _actor(request)
    editable = services.can_edit(session, actor)
    jobs = integration.jobs_for(session.id)
    results = integration.with_speedups(integration.results_by_step(jobs))
    step = steps[viewed]
    problems = []
    if session.engine_version != engine.ENGINE_VERSION:
        problems = services.recheck(session)
    return {
        "session": session, "steps": steps, "step": step, "viewed": viewed, "editable": editable,
        "owner_name": session.owner.get_username() if session.owner_id else "anonymous",
        "tree": _tree(steps, session.current, viewed, results),
        "ir_lines": _ir_lines(step.ir, _replayed(session, steps, viewed)),
        "actions": _actions_context(session, steps, viewed, at, editable, error, tried, defer_actions),
        "diff": _diff_context(session, steps, step.parent, viewed, code, mode),
        "bench": _bench_context(session, steps, results, jobs, viewed, editable),
        "problems": problems, "engine_version": engine.ENGINE_VERSION,
        "parent": step.parent, "children": sorted(s.index for s in steps.values() if s.parent == viewed),
        "step_count": len(steps),
        "share_url": request.build_absolute_uri(session.url),
    }


@require_GET
def editor(request, sid):
    session = _session_or_404(sid)
    partial = bool(request.headers.get("HX-Request")) and request.headers.get("HX-Target") == "editor"
    ctx = editor_context(request, session, _int_param(request, "step"), request.GET.get("at") or None,
                         request.GET.get("code", "ir"), request.GET.get("diff", "split"), defer_actions=partial)
    if partial:
        return render(request, "histories/_editor.html", ctx)
    return render(request, "histories/editor.html", ctx)


@require_GET
def actions_partial(request, sid):
    session = _session_or_404(sid)
    steps = services.steps_of(session)
    index = _int_param(request, "step", session.current)
    if index not in steps:
        raise Http404(f"session {sid} has no step {index}")
    editable = services.can_edit(session, _actor(request))
    ctx = {"actions": _actions_context(session, steps, index, request.GET.get("at") or None, editable),
           "session": session, "viewed": index}
    return render(request, "histories/_actions.html", ctx)


@require_GET
def diff_partial(request, sid):
    session = _session_or_404(sid)
    steps = services.steps_of(session)
    b = _int_param(request, "b", session.current)
    if b not in steps:
        raise Http404(f"session {sid} has no step {b}")
    a = _int_param(request, "a", steps[b].parent)
    if a is not None and a not in steps:
        raise Http404(f"session {sid} has no step {a}")
    ctx = {"diff": _diff_context(session, steps, a, b, request.GET.get("code", "ir"),
                                 request.GET.get("diff", "split")), "session": session}
    return render(request, "histories/_diff.html", ctx)


@require_POST
def apply_action(request, sid):
    session = _session_or_404(sid)
    actor = _actor(request)
    action = request.POST.get("action", "")
    parent = request.POST.get("parent", session.current)
    t0 = time.perf_counter()
    try:
        step, _created = services.add_step(session, actor, parent, action)
    except Refusal as r:
        if r.status == 400 and request.headers.get("HX-Request"):
            resp = render(request, "histories/_action_error.html", {"reason": r.reason, "tried": action},
                          status=400)
            resp["HX-Retarget"] = "#action-error"
            resp["HX-Reswap"] = "innerHTML"
            return resp
        if r.status == 400:
            viewed = _int_param(request, "parent", session.current)
            ctx = editor_context(request, session, viewed, error=r.reason, tried=action)
            return render(request, "histories/editor.html", ctx, status=400)
        return _refused(request, r)
    url = f"{session.url}?step={step.index}"
    if request.headers.get("HX-Request"):
        ctx = editor_context(request, session, step.index, code=request.POST.get("code", "ir"),
                             mode=request.POST.get("diff", "split"), defer_actions=True)
        resp = render(request, "histories/_editor.html", ctx)
        resp["HX-Push-Url"] = url
        resp["Server-Timing"] = f"apply;dur={(time.perf_counter() - t0) * 1000:.1f}"
        return resp
    return redirect(url)


def _owner_post(request, sid, fn):
    session = _session_or_404(sid)
    try:
        index = fn(session, _actor(request))
    except Refusal as r:
        return _refused(request, r)
    url = f"{session.url}?step={index}"
    if request.headers.get("HX-Request"):
        ctx = editor_context(request, session, index, code=request.POST.get("code", "ir"),
                             mode=request.POST.get("diff", "split"), defer_actions=True)
        resp = render(request, "histories/_editor.html", ctx)
        resp["HX-Push-Url"] = url
        return resp
    return redirect(url)


@require_POST
def undo(request, sid):
    """Move the current pointer to the parent of the viewed (or current) step."""
    def fn(session, actor):
        index = _int_param(request, "step", session.current)
        steps = services.steps_of(session)
        if index in steps and index != session.current:
            services.set_current(session, actor, index)
        return services.undo(session, actor).index
    return _owner_post(request, sid, fn)


@require_POST
def goto(request, sid):
    """Make a step the current one: the next action branches from there."""
    def fn(session, actor):
        return services.set_current(session, actor, request.POST.get("step", "")).index
    return _owner_post(request, sid, fn)


@require_POST
def fork(request, sid):
    session = _session_or_404(sid)
    actor = _actor(request)
    if actor.user_id is None:
        actor.session_key = ensure_session_key(request)
    at = request.POST.get("step") or None
    try:
        new, _token = services.fork(session, actor, at)
    except Refusal as r:
        return _refused(request, r)
    if actor.user_id is None:
        remember_owned(request, new.id)
    messages.success(request, f"Forked {session.id} into your own session {new.id}.")
    if request.headers.get("HX-Request"):
        resp = HttpResponse(status=204)
        resp["HX-Redirect"] = new.url
        return resp
    return redirect(new.url)


@require_POST
def benchmark(request, sid, index):
    from webapp.api.views import benchmark as submit
    session = _session_or_404(sid)
    runner = (request.POST.get("runner") or "").strip() or None
    try:
        job = submit(session, _actor(request), index, runner)
    except Refusal as r:
        if request.headers.get("HX-Request"):
            resp = HttpResponse(f'<p class="error" role="alert">{_esc(r.reason)}</p>', status=r.status)
            resp["HX-Retarget"] = "#bench-message"
            resp["HX-Reswap"] = "innerHTML"
            return resp
        return _refused(request, r)
    if request.headers.get("HX-Request"):
        ctx = bench_panel_context(session, int(index), True, event_job=job)
        return render(request, "histories/_bench_results.html", ctx)
    messages.success(request, f"Benchmark job {job['id']} queued for step {index}.")
    return redirect(f"{session.url}?step={index}#bench")


@require_GET
def bench_partial(request, sid):
    session = _session_or_404(sid)
    ctx = bench_panel_context(session, _int_param(request, "step", session.current),
                              services.can_edit(session, _actor(request)))
    return render(request, "histories/_bench_results.html", ctx)


def bench_panel_context(session, viewed, editable, event_job: dict | None = None):
    """The benchmark panel; ``event_job`` (a pushed job dict, the newest snapshot of that
    job) replaces the stored row of the same id, or is added."""
    steps = services.steps_of(session)
    jobs = integration.jobs_for(session.id)
    if event_job is not None and event_job.get("session_id") in (None, session.id):
        jobs = [j for j in jobs if j.get("id") != event_job.get("id")] + [event_job]
        jobs.sort(key=lambda j: (j.get("id") is None, j.get("id") if isinstance(j.get("id"), int) else 0))
    results = integration.with_speedups(integration.results_by_step(jobs))
    return {"bench": _bench_context(session, steps, results, jobs, viewed, editable), "session": session,
            "results": results}


def job_update_html(session, job: dict) -> str:
    """The out-of-band swaps for one job.update event (used by the websocket consumer):
    the benchmark panel (jobs, results, plot) and the step's badge in the history tree."""
    from django.template.loader import render_to_string
    ctx = bench_panel_context(session, session.current, False, event_job=job)
    ctx["oob"] = True
    index = job.get("step_index")
    entry = ctx["results"].get(index, {}) if isinstance(index, int) else {}
    best = entry.get("best")
    ctx["badge"] = {"index": index if isinstance(index, int) else None,
                    "best_time": _fmt_time(best["median_s"]) if best else "",
                    "speedup": entry.get("best_speedup"),
                    "pending": any(j.get("state") in ("queued", "running") for j in entry.get("jobs", []))}
    return render_to_string("histories/_job_update.html", ctx)


@require_GET
def compare(request, sid):
    session = _session_or_404(sid)
    steps = services.steps_of(session)
    a = _int_param(request, "a", 0)
    b = _int_param(request, "b", session.current)
    if a not in steps or b not in steps:
        raise Http404(f"session {sid} has no such step")
    code = request.GET.get("code", "ir")
    mode = request.GET.get("diff", "split")
    ctx = {"session": session, "steps": [steps[i] for i in sorted(steps)], "a": a, "b": b,
           "diff": _diff_context(session, steps, a, b, code, mode)}
    if request.headers.get("HX-Request"):
        return render(request, "histories/_diff.html", ctx)
    return render(request, "histories/compare.html", ctx)


@require_GET
def download(request, sid, index, target):
    from webapp.api.views import step_code
    return step_code(request, sid=sid, index=index, target=target)


@require_GET
def export_json(request, sid):
    import json
    session = _session_or_404(sid)
    resp = HttpResponse(json.dumps(services.export_history(session), indent=1),
                        content_type="application/json")
    resp["Content-Disposition"] = f'attachment; filename="perfdojo-{session.id}.json"'
    return resp


# ============================================================================ runners page

@require_GET
def runners_page(request):
    runners = integration.runners()
    for r in runners:
        r["hardware_text"] = integration.hardware_summary(r.get("hardware") or {})
    jobs = [_job_view(j) | {"kernel": j.get("kernel"), "session": j.get("session_id"),
                            "created": j.get("created")} for j in integration.recent_jobs(30)]
    return render(request, "histories/runners.html", {
        "available": integration.available(), "runners": runners, "jobs": jobs,
        "online": sum(1 for r in runners if r.get("online"))})


# ============================================================================ accounts

class DojoLoginView(LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = False

    def form_valid(self, form):
        owned = list(self.request.session.get(OWNED_KEY, []))
        response = super().form_valid(form)
        n = services.adopt(form.get_user(), owned)
        if n:
            messages.info(self.request, f"{n} session{'s' if n != 1 else ''} from this browser now belong to you.")
        return response


def signup(request):
    if request.method == "POST":
        form = UserCreationForm(request.POST)
        if form.is_valid():
            owned = list(request.session.get(OWNED_KEY, []))
            user = form.save()
            auth_login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            services.adopt(user, owned)
            messages.success(request, f"Welcome, {user.get_username()}.")
            nxt = request.POST.get("next") or "/"
            return redirect(nxt if nxt.startswith("/") and not nxt.startswith("//") else "/")
        return render(request, "registration/signup.html", {"form": form}, status=400)
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(request, "registration/signup.html", {"form": UserCreationForm(),
                                                        "next": request.GET.get("next", "")})


def account(request):
    from webapp.api.models import ApiToken
    if not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?{urlencode({'next': '/accounts/'})}")
    new_token = None
    if request.method == "POST":
        if request.POST.get("revoke"):
            ApiToken.objects.filter(user=request.user, id=request.POST["revoke"]).update(revoked=True)
        else:
            _tok, new_token = ApiToken.issue(request.user, request.POST.get("note", ""))
    elif request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    from .models import Session
    return render(request, "registration/account.html", {
        "tokens": ApiToken.objects.filter(user=request.user, revoked=False),
        "new_token": new_token,
        "sessions": Session.objects.filter(owner=request.user).order_by("-updated")[:100]})


# ============================================================================ test hook

@csrf_exempt
@require_POST
def test_push(request, sid):
    """Only with settings.DOJO_TEST_HOOKS: push a job.update to session-<sid> from this
    process (the in-memory channel layer only reaches this process's websockets).
    The body is a job dict; with "store": true (and the runners app installed) a Job row
    is stored first and its job_dict is pushed, as the runners app does."""
    import json
    if not getattr(settings, "DOJO_TEST_HOOKS", False):
        raise Http404("no such page")
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer
    session = _session_or_404(sid)
    job = json.loads(request.body or b"{}")
    job["session_id"] = sid
    if job.pop("store", False) and integration.available():
        from django.utils import timezone
        from webapp.runners.models import Job
        from webapp.runners.services import job_dict
        steps = services.steps_of(session)
        index = int(job.get("step_index") or 0)
        row = Job.objects.create(
            state=job.get("state", "queued"), source=session.source,
            steps=list(services.path_texts(steps, index)), kernel=session.kernel, session_id=sid,
            step_index=index, result=job.get("result"),
            finished=timezone.now() if job.get("state") in ("done", "failed") else None)
        job = job_dict(row)
        if job.get("runner") is None and isinstance(row.result, dict):
            job["runner"] = row.result.get("runner")
    async_to_sync(get_channel_layer().group_send)(f"session-{sid}", {"type": "job.update", "job": job})
    return JsonResponse({"ok": True, "job": job})

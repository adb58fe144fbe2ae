"""The kernel library as the gallery and ``GET /api/kernels`` show it.

Guarantees: none of these fails because of the kernel library or the job table.
``library_kernels()`` is [] when ``dojo_core.kernels`` cannot be read; a kernel whose
catalog entry is broken still gets a card (with what could be read); ``best_speedups()``
is {} when the results cannot be read.
"""
from __future__ import annotations

import logging

from dojo_core import kernels
from webapp.runners.models import Job
from webapp.runners.services import job_dict

from . import integration
from .models import Session
from .present import fmt_flops

log = logging.getLogger(__name__)
BEST_OF_JOBS = 5000             # the newest finished jobs that the gallery's best speedups look at


def library_kernels() -> list[str]:
    """Names of the library kernels, sorted; [] if the library cannot be read."""
    try:
        found = kernels.list_kernels()
        names = []
        for item in found:
            if isinstance(item, str):
                names.append(item)
            elif isinstance(item, tuple) and item:
                names.append(str(item[0]))
            else:
                names.append(str(getattr(item, "name", item)))
        return sorted(set(names))
    except Exception:                                   # noqa: BLE001 - the page must not 500
        log.warning("kernel library unavailable", exc_info=True)
        return []


def kernel_cards(with_results: bool = True) -> list:
    """One dict per library kernel: name, title, category, sizes, flops, best speedup."""
    names = library_kernels()
    best = best_speedups() if with_results and names else {}
    cards = []
    for name in names:
        card = {"name": name, "title": "", "category": "", "sizes": {}, "flops": None, "flops_text": "—",
                "has_steps": False, "best": best.get(name)}
        try:
            program = kernels.load_kernel(name)
            card["sizes"] = program.size_values
            entry = kernels.info(name)
            card["title"], card["category"] = entry.title, entry.category
            if entry.flops is not None:
                card["flops"] = int(entry.flops(program.size_values))
                card["flops_text"] = fmt_flops(card["flops"])
            card["has_steps"] = kernels.steps_path(name) is not None
        except Exception:                                    # noqa: BLE001 - show what we have
            log.warning("kernel %s: no catalog entry", name, exc_info=True)
        cards.append(card)
    return cards


def best_speedups() -> dict:
    """{kernel: best measured speedup over its root}: by the one definition of
    webapp/runners/results.py (the root timed in the same job or batch on the same runner)."""
    if not integration.available():
        return {}
    try:
        rows = list(Job.objects.filter(state="done", session_id__isnull=False)
                    .select_related("runner").order_by("-id")[:BEST_OF_JOBS])
        if not rows:
            return {}
        by_session = {}
        for job in rows:
            by_session.setdefault(job.session_id, []).append(job_dict(job))
        names = dict(Session.objects.filter(id__in=list(by_session)).values_list("id", "kernel"))
        best = {}
        for sid, jobs in by_session.items():
            name = names.get(sid)
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

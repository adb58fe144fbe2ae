"""The history tree of a session as the pages show it, and its live updates.

* ``tree_context(session, ...)``: what the templates need (``tree`` from
  ``present.history_tree`` with the session's agent runs as run nodes, ``step_count``).
* ``tree_oob_html(session)``: the history tree and the header's step count as htmx
  out-of-band swaps, rendered from the database at that moment and the same for every
  viewer (the viewed step is marked by the page itself), so a lost or repeated push never
  leaves a page wrong for longer than the next one.

``push.announce_steps`` tells the open pages that the steps changed; their websocket
consumer answers with ``tree_oob_html``.
"""
from __future__ import annotations

from django.template.loader import render_to_string

from webapp.agents.groups import run_groups

from . import integration, services
from .present import history_tree


def results_of(session) -> dict:
    return integration.with_speedups(integration.results_by_step(integration.jobs_for(session.id)))


def tree_context(session, steps: dict | None = None, results: dict | None = None, viewed=None) -> dict:
    steps = steps if steps is not None else services.steps_of(session)
    results = results if results is not None else results_of(session)
    current = session.current if session.current in steps else 0
    tree = history_tree(steps, current, results, viewed, run_groups(session, steps))
    return {"tree": tree, "step_count": len(steps)}


def tree_oob_html(session, steps: dict | None = None) -> str:
    """The tree and the step count of ``session`` as out-of-band swaps (no viewed step)."""
    ctx = tree_context(session, steps)
    return render_to_string("histories/_tree_push.html", {"session": session, **ctx})

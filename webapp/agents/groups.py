"""Which steps of a history each agent run made (the history tree's run nodes).

``run_groups(session, steps)`` gives, per agent run of the session (oldest first),
``{"id", "agent", "state", "final", "start_step", "steps"}`` where ``steps`` is the set of
step indices the run made:

* a finished run: every step it measured (its ``trials``) and the steps on the way there
  from its start step, counting only steps created while it ran (a step that existed
  before, which the run reused, stays the user's);
* a run still active: also every step under its start step created since it was queued
  (steps are announced before they are measured).

A step belongs to one run at most (runs of a session never overlap in time).  Reads the
runs only (one query); ``steps`` is the caller's ``{index: Step}``.
"""
from __future__ import annotations

from .models import AgentRun


def run_groups(session, steps: dict) -> list:
    runs = list(AgentRun.objects.filter(session=session).order_by("id"))
    claimed = set()
    out = []
    for run in runs:
        made = _made_by(run, steps) - claimed
        claimed |= made
        if made:
            out.append({"id": run.id, "agent": run.agent, "state": run.state, "final": run.final,
                        "start_step": run.start_step, "steps": made})
    return out


def last_step(group: dict):
    """The newest step a run made (None when it made none)."""
    return max(group["steps"]) if group and group["steps"] else None


def _made_by(run, steps: dict) -> set:
    start = run.start_step
    if start not in steps:
        return set()

    def in_window(step) -> bool:
        return step.created >= run.created and (run.finished is None or step.created <= run.finished)

    made = set()
    for trial in run.trials or []:
        index = trial.get("step") if isinstance(trial, dict) else None
        seen = set()
        while isinstance(index, int) and index in steps and index != start and index not in seen:
            seen.add(index)
            step = steps[index]
            if in_window(step):
                made.add(index)
            index = step.parent
        if index != start:                       # not under the start step: not this run's
            made -= seen
    if not run.final:
        for index, step in steps.items():
            if index != start and in_window(step) and _under(steps, index, start):
                made.add(index)
    return made


def _under(steps: dict, index: int, ancestor: int) -> bool:
    seen = set()
    while index is not None and index not in seen and index in steps:
        if index == ancestor:
            return True
        seen.add(index)
        index = steps[index].parent
    return False

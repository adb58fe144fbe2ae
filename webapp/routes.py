"""What the apps' URL tables share: the patterns of the ids in paths, and ``api(path, view,
name)``, a JSON route under /api/ on which a trailing slash is optional."""
from __future__ import annotations

from django.urls import re_path

SID = r"(?P<sid>[A-Za-z0-9]{1,16})"            # a history (session)
STEP = r"(?P<index>[0-9]{1,9})"                # a step of a history
JOB = r"(?P<job_id>[0-9]{1,30})"
RUN = r"(?P<run_id>[0-9]{1,12})"               # an agent run
KERNEL = r"(?P<name>[A-Za-z_][A-Za-z0-9_]{0,99})"


def api(path: str, view, name: str):
    """The route of ``/api/<path>`` (a regular expression) and ``/api/<path>/``."""
    return re_path(rf"^api/{path}/?$", view, name=name)

"""Hooks for the browser tests, routed only by the test URLconf (webapp/urls_test.py,
the ROOT_URLCONF when DOJO_TEST_HOOKS=1); no other URLconf names them.

``POST /__test__/push/ID`` pushes a job.update to the Channels group ``session-ID`` from
this process (the in-memory channel layer only reaches this process's websockets).  The
body is a job dict; with ``"store": true`` a Job row is stored first and its job_dict is
pushed, as the runners app does.
"""
from __future__ import annotations

import json

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import Http404, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from webapp.histories import integration, services
from webapp.histories.views.common import session_or_404
from webapp.runners.models import Job
from webapp.runners.services import job_dict

FINAL = ("done", "failed")


@csrf_exempt
@require_POST
def test_push(request, sid):
    if not getattr(settings, "DOJO_TEST_HOOKS", False):
        raise Http404("no such page")
    session = session_or_404(sid)
    job = json.loads(request.body or b"{}")
    job["session_id"] = sid
    if job.pop("store", False) and integration.available():
        steps = services.steps_of(session)
        index = int(job.get("step_index") or 0)
        row = Job.objects.create(
            state=job.get("state", "queued"), source=session.source,
            steps=list(services.path_texts(steps, index)), kernel=session.kernel, session_id=sid,
            step_index=index, result=job.get("result"),
            finished=timezone.now() if job.get("state") in FINAL else None)
        job = job_dict(row)
        if job.get("runner") is None and isinstance(row.result, dict):
            job["runner"] = row.result.get("runner")
    async_to_sync(get_channel_layer().group_send)(f"session-{sid}", {"type": "job.update", "job": job})
    return JsonResponse({"ok": True, "job": job})

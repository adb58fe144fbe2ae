"""Routes of the JSON API (included at the root by webapp/urls.py, after webapp.runners,
whose /api/runners and /api/jobs routes come first).  A trailing slash is optional."""
from django.urls import re_path

from webapp.routes import JOB, SID, STEP, api

from . import docs, job_views, views

urlpatterns = [
    re_path(r"^api/openapi\.json$", views.openapi, name="api-openapi"),
    api("docs", docs.api_docs, "api-docs"),
    api("jobs", job_views.job_submit, "api-jobs"),
    api(f"jobs/{JOB}/cancel", job_views.job_cancel, "api-job-cancel"),
    api("kernels", views.kernels, "api-kernels"),
    api("tokens", views.tokens, "api-tokens"),
    api("sessions", views.sessions, "api-sessions"),
    api("sessions/import", views.session_import, "api-session-import"),
    api(f"sessions/{SID}", views.session_detail, "api-session"),
    api(f"sessions/{SID}/actions", views.session_actions, "api-session-actions"),
    api(f"sessions/{SID}/steps", views.session_steps, "api-session-steps"),
    api(f"sessions/{SID}/steps/{STEP}", views.step_detail, "api-step"),
    api(f"sessions/{SID}/steps/{STEP}/code/(?P<target>c|cuda)", views.step_code, "api-step-code"),
    api(f"sessions/{SID}/steps/{STEP}/benchmark", views.step_benchmark, "api-step-benchmark"),
    api(f"sessions/{SID}/current", views.session_current, "api-session-current"),
    api(f"sessions/{SID}/fork", views.session_fork, "api-session-fork"),
    api(f"sessions/{SID}/export", views.session_export, "api-session-export"),
    re_path(r"^api(?:/(?P<rest>[\s\S]*))?$", views.not_found, name="api-not-found"),
]

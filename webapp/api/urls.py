"""Routes of the JSON API (included at the root by webapp/urls.py, after webapp.runners,
whose /api/runners and /api/jobs routes come first).  A trailing slash is optional."""
from django.urls import re_path

from . import docs, job_views, views

SID = r"(?P<sid>[A-Za-z0-9]{1,16})"
N = r"(?P<index>[0-9]{1,9})"

urlpatterns = [
    re_path(r"^api/openapi\.json$", views.openapi, name="api-openapi"),
    re_path(r"^api/docs/?$", docs.api_docs, name="api-docs"),
    re_path(r"^api/jobs/?$", job_views.job_submit, name="api-jobs"),
    re_path(r"^api/jobs/(?P<job_id>[0-9]{1,30})/cancel/?$", job_views.job_cancel, name="api-job-cancel"),
    re_path(r"^api/kernels/?$", views.kernels, name="api-kernels"),
    re_path(r"^api/tokens/?$", views.tokens, name="api-tokens"),
    re_path(r"^api/sessions/?$", views.sessions, name="api-sessions"),
    re_path(r"^api/sessions/import/?$", views.session_import, name="api-session-import"),
    re_path(rf"^api/sessions/{SID}/?$", views.session_detail, name="api-session"),
    re_path(rf"^api/sessions/{SID}/actions/?$", views.session_actions, name="api-session-actions"),
    re_path(rf"^api/sessions/{SID}/steps/?$", views.session_steps, name="api-session-steps"),
    re_path(rf"^api/sessions/{SID}/steps/{N}/?$", views.step_detail, name="api-step"),
    re_path(rf"^api/sessions/{SID}/steps/{N}/code/(?P<target>c|cuda)/?$", views.step_code, name="api-step-code"),
    re_path(rf"^api/sessions/{SID}/steps/{N}/benchmark/?$", views.step_benchmark, name="api-step-benchmark"),
    re_path(rf"^api/sessions/{SID}/current/?$", views.session_current, name="api-session-current"),
    re_path(rf"^api/sessions/{SID}/fork/?$", views.session_fork, name="api-session-fork"),
    re_path(rf"^api/sessions/{SID}/export/?$", views.session_export, name="api-session-export"),
    re_path(r"^api(?:/(?P<rest>[\s\S]*))?$", views.not_found, name="api-not-found"),
]

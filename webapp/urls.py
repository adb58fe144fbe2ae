"""URL routes, first match wins: the runners app (the runners page, /api/runners...,
GET /api/jobs/ID), the admin, agent runs, leaderboards, the rest of the JSON API (which
ends with a JSON 404 for anything under /api/), the pages of histories, and accounts.
The browser tests' hooks are in webapp/urls_test.py."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("webapp.runners.urls")),
    path("admin/", admin.site.urls),
    path("", include("webapp.agents.urls")),        # /s/ID/agents..., /api/agents..., /api/dataset.jsonl
    path("", include("webapp.leaderboards.urls")),  # /kernels/NAME/, /api/kernels/NAME/leaderboard, /api/library
    path("", include("webapp.api.urls")),
    path("", include("webapp.histories.urls")),     # gallery "/", editor /s/ID/
    path("", include("webapp.accounts.urls")),
]

# JSON under /api/ for whatever no view answers (webapp/api/errors.py)
handler400 = "webapp.api.errors.bad_request"
handler403 = "webapp.api.errors.forbidden"
handler404 = "webapp.api.errors.not_found"
handler500 = "webapp.api.errors.server_error"

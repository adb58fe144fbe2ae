"""URL routes: the runners app (issue 5), the JSON API and the pages (issue 6)."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("webapp.runners.urls")),     # /api/runners..., /api/jobs/ID (issue 5)
    path("admin/", admin.site.urls),
    path("", include("webapp.agents.urls")),      # agent runs, /api/agents..., /api/dataset.jsonl (issue 7)
    path("", include("webapp.leaderboards.urls")),  # /kernels/NAME/, /api/kernels/NAME/leaderboard, /api/library (issue 8)
    path("", include("webapp.api.urls")),         # the rest of /api/ (issue 6); ends with a JSON 404
    path("", include("webapp.histories.urls")),   # gallery "/", editor /s/ID/, accounts (issue 6)
]

# JSON under /api/ for whatever no view answers (webapp/api/errors.py)
handler400 = "webapp.api.errors.bad_request"
handler403 = "webapp.api.errors.forbidden"
handler404 = "webapp.api.errors.not_found"
handler500 = "webapp.api.errors.server_error"

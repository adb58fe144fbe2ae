"""Routes of the leaderboards app; included in webapp/urls.py before webapp.api (whose
catch-all answers unknown /api/ paths).  A trailing slash is optional."""
from django.urls import re_path

from webapp.routes import KERNEL, api

from . import views

urlpatterns = [
    re_path(rf"^kernels/{KERNEL}/?$", views.kernel_page, name="kernel-page"),
    api(f"kernels/{KERNEL}/leaderboard", views.api_leaderboard, "api-kernel-leaderboard"),
    api("library/records", views.api_records, "api-library-records"),
    api("library", views.api_library, "api-library"),
    re_path(r"^library/download/?$", views.library_download, name="library-download"),
]

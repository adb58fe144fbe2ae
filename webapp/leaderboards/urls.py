"""Routes of the leaderboards app; included in webapp/urls.py before webapp.api (whose
catch-all answers unknown /api/ paths).  A trailing slash is optional."""
from django.urls import re_path

from . import views

NAME = r"(?P<name>[A-Za-z_][A-Za-z0-9_]{0,99})"

urlpatterns = [
    re_path(rf"^kernels/{NAME}/?$", views.kernel_page, name="kernel-page"),
    re_path(rf"^api/kernels/{NAME}/leaderboard/?$", views.api_leaderboard, name="api-kernel-leaderboard"),
    re_path(r"^api/library/records/?$", views.api_records, name="api-library-records"),
    re_path(r"^api/library/?$", views.api_library, name="api-library"),
    re_path(r"^library/download/?$", views.library_download, name="library-download"),
]

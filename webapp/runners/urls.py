"""Routes of the runners app (included at the root by webapp/urls.py): the runners page,
and the JSON routes, on which a trailing slash is optional."""
from django.urls import path, re_path

from . import pages, views

urlpatterns = [
    path("runners/", pages.runners_page, name="runners-page"),
    re_path(r"^api/runners/?$", views.runners_list, name="api-runners"),
    re_path(r"^api/runners/register/?$", views.register, name="runner-register"),
    re_path(r"^api/runners/heartbeat/?$", views.heartbeat, name="runner-heartbeat"),
    re_path(r"^api/runners/bye/?$", views.bye, name="runner-bye"),
    re_path(r"^api/runners/jobs/(?P<job_id>[0-9]{1,30})/claim/?$", views.claim, name="runner-claim"),
    re_path(r"^api/runners/jobs/(?P<job_id>[0-9]{1,30})/result/?$", views.result, name="runner-result"),
    re_path(r"^api/runners/jobs/(?P<job_id>[0-9]{1,30})/release/?$", views.release, name="runner-release"),
    re_path(r"^api/jobs/(?P<job_id>[0-9]{1,30})/?$", views.job_detail, name="api-job"),
]

"""Routes of the runners app (included at the root by webapp/urls.py). A trailing
slash is optional on every route."""
from django.urls import re_path

from . import views

urlpatterns = [
    re_path(r"^api/runners/?$", views.runners_list, name="api-runners"),
    re_path(r"^api/runners/register/?$", views.register, name="runner-register"),
    re_path(r"^api/runners/heartbeat/?$", views.heartbeat, name="runner-heartbeat"),
    re_path(r"^api/runners/bye/?$", views.bye, name="runner-bye"),
    re_path(r"^api/runners/jobs/(?P<job_id>[0-9]{1,30})/claim/?$", views.claim, name="runner-claim"),
    re_path(r"^api/runners/jobs/(?P<job_id>[0-9]{1,30})/result/?$", views.result, name="runner-result"),
    re_path(r"^api/runners/jobs/(?P<job_id>[0-9]{1,30})/release/?$", views.release, name="runner-release"),
    re_path(r"^api/jobs/(?P<job_id>[0-9]{1,30})/?$", views.job_detail, name="api-job"),
]

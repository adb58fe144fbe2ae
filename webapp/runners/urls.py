"""Routes of the runners app (included at the root by webapp/urls.py): the runners page,
and the JSON routes, on which a trailing slash is optional."""
from django.urls import path

from webapp.routes import JOB, api

from . import pages, views

urlpatterns = [
    path("runners/", pages.runners_page, name="runners-page"),
    api("runners", views.runners_list, "api-runners"),
    api("runners/register", views.register, "runner-register"),
    api("runners/heartbeat", views.heartbeat, "runner-heartbeat"),
    api("runners/bye", views.bye, "runner-bye"),
    api(f"runners/jobs/{JOB}/claim", views.claim, "runner-claim"),
    api(f"runners/jobs/{JOB}/result", views.result, "runner-result"),
    api(f"runners/jobs/{JOB}/release", views.release, "runner-release"),
    api(f"jobs/{JOB}", views.job_detail, "api-job"),
]

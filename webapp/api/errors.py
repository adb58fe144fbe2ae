"""Error answers outside the views: under /api/ every one is JSON {"error": reason}.

Django calls these for requests no view answered: ``csrf_failure`` (CSRF_FAILURE_VIEW),
``not_found``, ``bad_request``, ``forbidden`` and ``server_error`` (handler404/400/403/500
in webapp/urls.py).  Elsewhere they answer as Django's own handlers do.  None of them
shows a traceback, whatever DEBUG is.
"""
from __future__ import annotations

from django.views import defaults
from django.views.csrf import csrf_failure as django_csrf_failure

from webapp.jsonapi import error


def is_api(request) -> bool:
    return request.path.startswith("/api/") or request.path == "/api"


def csrf_failure(request, reason: str = "", template_name=None):
    if is_api(request):
        return error(403, "CSRF check failed: send the X-CSRFToken header with the csrftoken "
                          "cookie, or authenticate with 'Authorization: Token ...'")
    return django_csrf_failure(request, reason=reason)


def not_found(request, exception=None):
    if is_api(request):
        return error(404, f"no API endpoint {request.path!r}; see /api/openapi.json")
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    if is_api(request):
        return error(400, "bad request")
    return defaults.bad_request(request, exception)


def forbidden(request, exception=None):
    if is_api(request):
        return error(403, "forbidden")
    return defaults.permission_denied(request, exception)


def server_error(request):
    if is_api(request):
        return error(500, "internal error (logged on the server)")
    return defaults.server_error(request)

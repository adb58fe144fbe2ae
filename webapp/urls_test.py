"""The URLconf of the browser tests (ROOT_URLCONF when DOJO_TEST_HOOKS=1): every route of
webapp/urls.py, its error handlers, and the test hooks (webapp/testhooks.py)."""
from django.urls import re_path

from webapp import testhooks
from webapp.routes import SID
from webapp.urls import handler400, handler403, handler404, handler500, urlpatterns as site  # noqa: F401

urlpatterns = [
    re_path(rf"^__test__/push/{SID}$", testhooks.test_push, name="test-push"),
    *site,
]

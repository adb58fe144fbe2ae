"""Routes of the pages (included at the root by webapp/urls.py)."""
from django.contrib.auth.views import LogoutView
from django.urls import path, re_path

from . import views

SID = r"(?P<sid>[A-Za-z0-9]{1,16})"

urlpatterns = [
    path("", views.gallery, name="home"),
    path("new", views.new_session, name="new-session"),
    path("import", views.import_session, name="import-session"),
    path("runners/", views.runners_page, name="runners-page"),
    re_path(rf"^s/{SID}/$", views.editor, name="editor"),
    re_path(rf"^s/{SID}$", views.editor),
    re_path(rf"^s/{SID}/actions$", views.actions_partial, name="editor-actions"),
    re_path(rf"^s/{SID}/diff$", views.diff_partial, name="editor-diff"),
    re_path(rf"^s/{SID}/apply$", views.apply_action, name="editor-apply"),
    re_path(rf"^s/{SID}/undo$", views.undo, name="editor-undo"),
    re_path(rf"^s/{SID}/goto$", views.goto, name="editor-goto"),
    re_path(rf"^s/{SID}/fork$", views.fork, name="editor-fork"),
    re_path(rf"^s/{SID}/compare$", views.compare, name="editor-compare"),
    re_path(rf"^s/{SID}/bench$", views.bench_partial, name="editor-bench"),
    re_path(rf"^s/{SID}/export\.json$", views.export_json, name="editor-export"),
    re_path(rf"^s/{SID}/steps/(?P<index>[0-9]{{1,9}})/benchmark$", views.benchmark, name="editor-benchmark"),
    re_path(rf"^s/{SID}/steps/(?P<index>[0-9]{{1,9}})/download/(?P<target>c|cuda)$", views.download,
            name="editor-download"),
    re_path(rf"^__test__/push/{SID}$", views.test_push, name="test-push"),
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", views.DojoLoginView.as_view(), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
    path("accounts/", views.account, name="account"),
]

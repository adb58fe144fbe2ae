"""Routes of the pages of histories (included at the root by webapp/urls.py)."""
from django.urls import path, re_path

from webapp.routes import SID, STEP

from .views import bench, compare, editor, gallery, steps

urlpatterns = [
    path("", gallery.gallery, name="home"),
    path("new", gallery.new_session, name="new-session"),
    path("import", gallery.import_session, name="import-session"),
    re_path(rf"^s/{SID}/$", editor.editor, name="editor"),
    re_path(rf"^s/{SID}$", editor.editor),
    re_path(rf"^s/{SID}/actions$", editor.actions_partial, name="editor-actions"),
    re_path(rf"^s/{SID}/diff$", compare.diff_partial, name="editor-diff"),
    re_path(rf"^s/{SID}/asm$", compare.asm_partial, name="editor-asm"),
    re_path(rf"^s/{SID}/apply$", editor.apply_action, name="editor-apply"),
    re_path(rf"^s/{SID}/undo$", editor.undo, name="editor-undo"),
    re_path(rf"^s/{SID}/goto$", editor.goto, name="editor-goto"),
    re_path(rf"^s/{SID}/fork$", editor.fork, name="editor-fork"),
    re_path(rf"^s/{SID}/replay$", steps.replay, name="editor-replay"),
    re_path(rf"^s/{SID}/steps\.txt$", steps.steps_file, name="editor-steps-file"),
    re_path(rf"^s/{SID}/sizes$", gallery.resize_session, name="editor-sizes"),
    re_path(rf"^s/{SID}/compare$", compare.compare, name="editor-compare"),
    re_path(rf"^s/{SID}/bench$", bench.bench_partial, name="editor-bench"),
    re_path(rf"^s/{SID}/export\.json$", compare.export_json, name="editor-export"),
    re_path(rf"^s/{SID}/steps/{STEP}/benchmark$", bench.benchmark, name="editor-benchmark"),
    re_path(rf"^s/{SID}/steps/{STEP}/download/(?P<target>c|cuda)$", compare.download, name="editor-download"),
]

"""Routes of agent runs (included by webapp/urls.py before the API's catch-all)."""
from django.urls import re_path

from webapp.routes import RUN, SID, api

from . import views

urlpatterns = [
    re_path(rf"^s/{SID}/agents$", views.start_from_editor, name="editor-agent-start"),
    re_path(rf"^s/{SID}/agents/{RUN}/stop$", views.stop_from_editor, name="editor-agent-stop"),
    api("agents", views.agents_list, "api-agents"),
    api(f"sessions/{SID}/agents", views.session_agents, "api-session-agents"),
    api(f"agents/{RUN}", views.run_detail, "api-agent-run"),
    api(f"agents/{RUN}/stop", views.run_stop, "api-agent-run-stop"),
    api(f"agents/{RUN}/notify", views.run_notify, "api-agent-run-notify"),
    re_path(r"^api/dataset\.jsonl$", views.dataset, name="api-dataset"),
]

"""Routes of agent runs (included by webapp/urls.py before the API's catch-all)."""
from django.urls import re_path

from . import views

SID = r"(?P<sid>[A-Za-z0-9]{1,16})"
RUN = r"(?P<run_id>[0-9]{1,12})"

urlpatterns = [
    re_path(rf"^s/{SID}/agents$", views.start_from_editor, name="editor-agent-start"),
    re_path(rf"^s/{SID}/agents/{RUN}/stop$", views.stop_from_editor, name="editor-agent-stop"),
    re_path(r"^api/agents/?$", views.agents_list, name="api-agents"),
    re_path(rf"^api/sessions/{SID}/agents/?$", views.session_agents, name="api-session-agents"),
    re_path(rf"^api/agents/{RUN}/?$", views.run_detail, name="api-agent-run"),
    re_path(rf"^api/agents/{RUN}/stop/?$", views.run_stop, name="api-agent-run-stop"),
    re_path(rf"^api/agents/{RUN}/notify/?$", views.run_notify, name="api-agent-run-notify"),
    re_path(r"^api/dataset\.jsonl$", views.dataset, name="api-dataset"),
]

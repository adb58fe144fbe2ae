from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "webapp.agents"
    label = "agents"
    verbose_name = "Agent runs"
    default_auto_field = "django.db.models.BigAutoField"

from django.apps import AppConfig


class RunnersConfig(AppConfig):
    name = "webapp.runners"
    label = "runners"
    verbose_name = "Runners and jobs"
    default_auto_field = "django.db.models.BigAutoField"

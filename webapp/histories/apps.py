from django.apps import AppConfig


class HistoriesConfig(AppConfig):
    name = "webapp.histories"
    label = "histories"
    verbose_name = "Optimization histories"
    default_auto_field = "django.db.models.BigAutoField"

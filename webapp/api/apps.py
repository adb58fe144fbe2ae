from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "webapp.api"
    label = "api"
    verbose_name = "JSON API"
    default_auto_field = "django.db.models.BigAutoField"

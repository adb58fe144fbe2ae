from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "webapp.accounts"
    label = "accounts"
    verbose_name = "Accounts"

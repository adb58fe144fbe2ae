"""Routes of the account pages (included at the root by webapp/urls.py)."""
from django.contrib.auth.views import LogoutView
from django.urls import path

from . import views

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", views.DojoLoginView.as_view(), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
    path("accounts/", views.account, name="account"),
]

"""URL routes. Only the placeholder home page for now."""
from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
]

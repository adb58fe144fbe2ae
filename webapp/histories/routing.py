"""Websocket routes of the histories app (webapp/asgi.py mounts them)."""
from django.urls import re_path

from . import consumers

websocket_urlpatterns = [
    re_path(r"^ws/s/(?P<sid>[A-Za-z0-9]{1,16})/$", consumers.SessionConsumer.as_asgi()),
]

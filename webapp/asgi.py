"""The ASGI entry point (daphne): a Channels router, HTTP only for now."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()   # set up Django before importing anything that uses it

from channels.routing import ProtocolTypeRouter  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi_app,
})

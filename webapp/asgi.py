"""The ASGI entry point (daphne): a Channels router for HTTP and websockets."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()   # set up Django before importing anything that uses it

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from webapp.histories.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AllowedHostsOriginValidator(URLRouter(websocket_urlpatterns)),   # /ws/s/ID/ (issue 6)
})

# The reaper of dead runners' jobs runs on this server's event loop (webapp/runners/background.py).
from webapp.runners.background import with_background  # noqa: E402

application = with_background(application)

"""The ASGI entry point (daphne): a Channels router for HTTP and websockets.

HTTP goes to ``SyncChainASGIHandler``: Django's ASGI handler, except that the
middleware chain and the view run synchronously, in one hop to a worker thread
per request.  Django's own async chain hops between the event loop and a thread
for every method of every sync middleware (about 30 hops a request here, several
milliseconds under load); all our views and middleware are sync.

The worker threads are a fixed pool (DOJO_HTTP_THREADS, default 16: that many
requests are served at once), so each thread keeps its database connection from
one request to the next (CONN_MAX_AGE); as under WSGI, a connection that failed
or outlived CONN_MAX_AGE is closed before and after each request in its thread.
Otherwise the behaviour is Django's (request signals, streaming responses; an
async view still works, through async_to_sync), except that no thread is started
per request.
"""
import os
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402
from django.db import close_old_connections  # noqa: E402

django.setup(set_prefix=False)


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self, threads: int = 16):
        super().__init__()
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")
        self._pooled = sync_to_async(self._get_response_in_pool, thread_sensitive=False,
                                     executor=self.pool)

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)              # the sync chain, as under WSGI

    async def __call__(self, scope, receive, send):
        # Django wraps this in a ThreadSensitiveContext, which starts a thread per request
        # for the request signals; they run on asgiref's one shared thread instead.
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)

    def _get_response_in_pool(self, request):
        close_old_connections()
        try:
            return self.get_response(request)
        finally:
            close_old_connections()

    async def get_response_async(self, request):
        return await self._pooled(request)


django_asgi_app = SyncChainASGIHandler(int(os.environ.get("DOJO_HTTP_THREADS") or 16))

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from webapp.histories.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AllowedHostsOriginValidator(URLRouter(websocket_urlpatterns)),   # /ws/s/ID/
})

# The reaper of dead runners' jobs runs on this server's event loop (webapp/runners/background.py).
from webapp.runners.background import with_background  # noqa: E402

application = with_background(application)

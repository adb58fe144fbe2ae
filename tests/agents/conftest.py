"""Fixtures of the agents tests: fake JSON endpoints (stand-ins for an LLM or an embedding
service: none exists here) on a free local port."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest


@pytest.fixture
def json_endpoint():
    """``json_endpoint(respond, server_class=HTTPServer)`` serves POST requests on a free local
    port until the test ends and returns its base url ``http://127.0.0.1:PORT/v1``.
    ``respond(path, body, authorization)`` gets each request, its JSON body parsed, and returns
    (HTTP status, reply): the reply is sent as JSON, or None sends no body."""
    servers = []

    def start(respond, server_class=HTTPServer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):                                # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, reply = respond(self.path, body, self.headers.get("Authorization"))
                self.send_response(status)
                if reply is None:
                    self.end_headers()
                    return
                payload = json.dumps(reply).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        server = server_class(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()

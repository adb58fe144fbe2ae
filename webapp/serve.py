"""daphne with bounded request headers: ``python -m webapp.serve [daphne arguments]``.

What webapp.launch (``make run``) starts.  Twisted, under daphne, drops the connection
without an answer when one header line is longer than 16 KiB, and answers a bare 400 when
all headers pass 16 KiB.  Here both limits are HEADER_WIRE_LIMIT and both answers are
JSON: 431 for a line too long, 400 for headers too large in all.  Requests under that
reach Django, where webapp.api.limits answers 431 past DOJO_MAX_HEADER_BYTES.
The GIL switch interval is 1 ms, so that CPU-bound requests delay the others less.

The access log has one line per request a person or client made (QuietAccessLog): the
runner protocol's heartbeats and job traffic, the agents' progress pushes, polls of a
job's or agent run's state, static files and websocket connects and disconnects are left
out unless they fail (status 400 and up; a refused websocket).  DOJO_ACCESS_LOG=all logs
every request as daphne does, DOJO_ACCESS_LOG=off none.
"""
from __future__ import annotations

import json
import os
import re

from daphne.access import AccessLogGenerator       # no reactor: daphne.server is imported in main()

HEADER_WIRE_LIMIT = 64 * 1024


def _answer(status: str, reason: str) -> bytes:
    body = json.dumps({"error": reason}).encode()
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


def bound_headers() -> None:
    """Patch twisted's HTTPChannel (class attributes, before any connection)."""
    from twisted.internet import reactor
    from twisted.web import http

    received = http.HTTPChannel.dataReceived

    def data_received(self, data):
        if not getattr(self, "_dojo_refused", False):        # else: the rest of a refused request
            received(self, data)

    def line_too_long(self, line=b""):
        # answer, then read and drop what the client still sends for a moment before closing:
        # closing with unread data resets the connection and the client loses the answer
        self._dojo_refused = True
        self.transport.write(_answer("431 Request Header Fields Too Large",
                                     f"a request header line is over {HEADER_WIRE_LIMIT} bytes"))
        reactor.callLater(1.0, self.transport.loseConnection)

    def bad_request(self):
        self.transport.write(_answer("400 Bad Request", "malformed request, or request headers "
                                     f"over {HEADER_WIRE_LIMIT} bytes in all"))
        self.loseConnection()

    http.HTTPChannel.MAX_LENGTH = HEADER_WIRE_LIMIT
    http.HTTPChannel.totalHeadersSize = HEADER_WIRE_LIMIT
    http.HTTPChannel.lineLengthExceeded = line_too_long
    http.HTTPChannel.dataReceived = data_received
    http.HTTPChannel._respondToBadRequestAndDisconnect = bad_request


QUIET_PATHS = re.compile(r"^/(?:static/|favicon|api/runners/(?:heartbeat|bye|jobs/)|api/agents/\d+/notify)")
QUIET_POLLS = re.compile(r"^/api/(?:jobs|agents)/\d+/?$")      # GET: a job's or agent run's state, polled


class QuietAccessLog(AccessLogGenerator):
    """daphne's access log without the background traffic (see the module docstring)."""

    def __call__(self, protocol, action, details):
        if protocol == "websocket" and action != "rejected":
            return
        if protocol == "http" and action == "complete" and (details.get("status") or 0) < 400:
            path = details.get("path") or ""
            if QUIET_PATHS.match(path) or (details.get("method") == "GET" and QUIET_POLLS.match(path)):
                return
        super().__call__(protocol, action, details)


def main() -> None:
    import sys
    # the GIL changes hands every 1 ms instead of 5: a thread busy checking a kernel delays
    # the other requests' threads less
    sys.setswitchinterval(0.001)
    import daphne.server  # noqa: F401  (installs its asyncio reactor before twisted's default one)
    bound_headers()
    from daphne import cli
    mode = os.environ.get("DOJO_ACCESS_LOG", "quiet").lower()
    if mode == "off":
        sys.argv[1:1] = ["-v", "0"]
    elif mode != "all":
        cli.AccessLogGenerator = QuietAccessLog
    cli.CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()

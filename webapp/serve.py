"""daphne with bounded request headers: ``python -m webapp.serve [daphne arguments]``.

What webapp.launch (``make run``) starts.  Twisted, under daphne, drops the connection
without an answer when one header line is longer than 16 KiB, and answers a bare 400 when
all headers pass 16 KiB.  Here both limits are HEADER_WIRE_LIMIT and both answers are
JSON: 431 for a line too long, 400 for headers too large in all.  Requests under that
reach Django, where webapp.api.limits answers 431 past DOJO_MAX_HEADER_BYTES.
The GIL switch interval is 1 ms, so that CPU-bound requests delay the others less.
"""
from __future__ import annotations

import json

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


def main() -> None:
    import sys
    # the GIL changes hands every 1 ms instead of 5: a thread busy checking a kernel delays
    # the other requests' threads less
    sys.setswitchinterval(0.001)
    bound_headers()
    from daphne.cli import CommandLineInterface
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()

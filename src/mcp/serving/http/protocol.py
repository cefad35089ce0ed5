"""uvicorn's HTTP/1.1 protocol (h11) with a deadline on a request's headers.

A connection that opens and then sends its headers a byte at a time (or never) would otherwise
be held as long as the client likes: uvicorn's keep-alive timer only runs between requests. Here
a request's headers must be complete within ``header_timeout_s`` of the connection opening, or of
the request's first byte on a kept-alive connection; else the connection is closed. The body's
own deadline is the app's (``BodyLimit``: a 408). ``serve`` and ``gateway`` both use it.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def with_header_deadline(header_timeout_s: float) -> type[asyncio.Protocol]:
    """The protocol class to give ``uvicorn.Config(http=...)``."""
    return type("H11WithHeaderDeadline", (_HeaderDeadline,), {"header_timeout_s": header_timeout_s})


class _HeaderDeadline(H11Protocol):
    header_timeout_s = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self._deadline is not None and self.conn.their_state is not h11.IDLE:
            self._disarm()  # the headers are in

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(self.header_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.info("closing a connection whose request headers were not complete within %g s",
                             self.header_timeout_s)
            self.transport.close()

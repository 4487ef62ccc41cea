"""A listening site whose connections must send each request's headers in time, or are closed.

aiohttp closes a connection that idles between requests (its keep-alive timeout), but not one that trickles a
request's headers a byte at a time: such connections stay open for as long as the sender likes, and a few
hundred of them hold the server's sockets. Each connection here is wrapped (`HeaderDeadline`): from the moment
it opens, and from the first byte of each later request, the request's headers (up to the blank line) must
arrive within `timeout` seconds. The body is then left to the handler, whose own read has a time limit, and
whose Content-Length says where the next request begins. A request whose body length the wrapper cannot know
(`Transfer-Encoding`) ends the watching for that connection; the webhook refuses such requests and closes it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from aiohttp import web

from bot.telemetry import logs

HEADER_TIMEOUT = 10.0  # seconds for a request's headers; GitHub sends them in one packet
HEAD_LIMIT = 64 * 1024  # past this many header bytes the parser refuses the request anyway
END_OF_HEAD = b"\r\n\r\n"
CONTENT_LENGTH = re.compile(rb"^content-length:[ \t]*([0-9]{1,12})[ \t]*$", re.IGNORECASE | re.MULTILINE)
TRANSFER_ENCODING = re.compile(rb"^transfer-encoding:", re.IGNORECASE | re.MULTILINE)


class HeaderDeadline(asyncio.Protocol):
    """aiohttp's protocol for one connection, with a deadline on each request's headers."""

    def __init__(self, inner: Any, timeout: float = HEADER_TIMEOUT):
        self.inner = inner
        self.timeout = timeout
        self.transport: asyncio.BaseTransport | None = None
        self.head = bytearray()  # the current request's header bytes so far
        self.body_left = 0  # body bytes of the current request still to come
        self.watching = True
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio's calls, handed on ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.inner.connection_made(transport)
        self._start()

    def data_received(self, data: bytes) -> None:
        if self.watching:
            self._watch(data)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # -- the deadline ------------------------------------------------------------------------------------------

    def _watch(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.body_left:
                taken = min(self.body_left, len(view))
                self.body_left -= taken
                view = view[taken:]
                continue
            if self._timer is None:  # the first byte of a request after an earlier one
                self._start()
            seen = len(self.head)
            self.head += view
            end = self.head.find(END_OF_HEAD, max(0, seen - 3))
            if end < 0:
                if len(self.head) > HEAD_LIMIT:
                    self._give_up()  # aiohttp answers 431/400 to it; nothing left to time
                return
            rest = len(self.head) - (end + len(END_OF_HEAD))
            head = bytes(self.head[:end])
            self.head.clear()
            self._stop()
            if TRANSFER_ENCODING.search(head):
                self._give_up()
                return
            length = CONTENT_LENGTH.search(head)
            self.body_left = int(length.group(1)) if length else 0
            view = view[len(view) - rest :] if rest else view[:0]

    def _start(self) -> None:
        self._stop()
        self._timer = asyncio.get_running_loop().call_later(self.timeout, self._late)

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _give_up(self) -> None:
        self.watching = False
        self.head.clear()
        self._stop()

    def _late(self) -> None:
        self._timer = None
        if self.transport is not None and not self.transport.is_closing():
            logs.event(
                "connection closed: its request's headers did not arrive in time", logging.WARNING, seconds=self.timeout
            )
            self.transport.close()


class DeadlineSite(web.BaseSite):
    """aiohttp's TCP site with `HeaderDeadline` on every connection."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, *, timeout: float | None = None):
        super().__init__(runner)
        self._host, self._port = host, port
        self.timeout = HEADER_TIMEOUT if timeout is None else timeout

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            lambda: HeaderDeadline(server(), self.timeout),
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=True,
        )

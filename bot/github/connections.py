"""The App's HTTP connections to GitHub: several small httpx pools, each request sent on the least busy one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import httpx

# Connections per pool. httpcore 1.0.9's pool checks every connection's socket each time a request joins or leaves
# it, so a pool's cost per request grows with its size (bench/RESULTS.md, "Connections kept open between
# bursts"). And it closes a connection that falls idle whenever it holds more than its keep-alive number in all,
# so a pool must keep open as many as it may hold.
SHARD_CONNECTIONS = 15


class ConnectionShards:
    """httpx clients that share the requests under way. Together they hold at least as many connections as the
    App lets requests be under way (`InFlightBudget`), so a request never waits for a connection, and every
    connection is kept open between bursts instead of opened again (against api.github.com: a TLS handshake)."""

    def __init__(self, clients: Sequence[httpx.AsyncClient]):
        if not clients:
            raise ValueError("ConnectionShards needs at least one httpx client")
        self.clients = tuple(clients)
        self._busy = [0] * len(self.clients)

    @classmethod
    def for_budget(cls, in_flight: int, timeout: httpx.Timeout, size: int = SHARD_CONNECTIONS) -> ConnectionShards:
        """Enough pools of `size` connections for `in_flight` requests under way at once."""
        count = max(1, -(-in_flight // size))
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        return cls([httpx.AsyncClient(timeout=timeout, http2=False, limits=limits) for _ in range(count)])

    @property
    def busy(self) -> tuple[int, ...]:
        """Requests under way on each pool."""
        return tuple(self._busy)

    async def request(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> httpx.Response:
        shard = min(range(len(self._busy)), key=self._busy.__getitem__)
        self._busy[shard] += 1
        try:
            return await self.clients[shard].request(method, url, headers=dict(headers), content=body)
        finally:
            self._busy[shard] -= 1

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()

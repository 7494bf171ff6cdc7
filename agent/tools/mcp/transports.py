"""The SDK client over a server's transport (stdio child or Streamable HTTP), each attempt
watched through a :class:`~agent.tools.mcp.watch.TransportWatch`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx2
from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client

from agent.tools.mcp.spec import McpServerSpec
from agent.tools.mcp.stdio import stdio_transport
from agent.tools.mcp.watch import TransportWatch

HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The SDK's own HTTP timeouts: a server may hold a response stream open for minutes."""
SERVER_GONE = (httpx2.NetworkError, httpx2.RemoteProtocolError)
"""Request failures that mean the server is not there (refused, reset, cut off); not timeouts:
a slow server is judged by the call's own timeout."""


class WatchedTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport that tells the watch when a request finds the server gone, so the
    call waiting for it fails at once instead of after its timeout."""

    def __init__(self, watch: TransportWatch) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._watch = watch

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request``; a connection failure also marks the server gone."""
        try:
            return await self._inner.handle_async_request(request)
        except SERVER_GONE as exc:
            self._watch.fail(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            raise

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._inner.aclose()


def server_client(
    spec: McpServerSpec, on_message: MessageHandlerFnT, watch: TransportWatch
) -> contextlib.AbstractAsyncContextManager[Client]:
    """The SDK client for ``spec`` (entering it connects and shakes hands)."""
    if spec.command is not None:
        return _stdio_client(spec, on_message, watch)
    return _http_client(spec, on_message, watch)


@contextlib.asynccontextmanager
async def _stdio_client(
    spec: McpServerSpec, on_message: MessageHandlerFnT, watch: TransportWatch
) -> AsyncIterator[Client]:
    async with Client(stdio_transport(spec, watch), message_handler=on_message) as client:
        yield client


@contextlib.asynccontextmanager
async def _http_client(
    spec: McpServerSpec, on_message: MessageHandlerFnT, watch: TransportWatch
) -> AsyncIterator[Client]:
    assert spec.url is not None
    async with (
        httpx2.AsyncClient(
            headers=spec.headers, timeout=HTTP_TIMEOUT, transport=WatchedTransport(watch)
        ) as http,
        Client(
            streamable_http_client(spec.url, http_client=http), message_handler=on_message
        ) as client,
    ):
        yield client

"""One MCP server's connection, owned by one long-lived task.

The SDK's client lives in anyio cancel scopes that must be exited by the task that entered them,
so one task per server enters the client, lists the tools, serves calls handed to it through a
queue (each answered through a future), and on any loss of the connection reconnects with a
doubling backoff, for as long as the process runs: nothing ever parks a server. Callers never
wait on a server that is down: a call then returns an error text at once, and a call slower than
the server's ``timeout_seconds`` returns one in time. A caller cancelled mid-call (``/stop``)
cancels the call in the owner task too, and the SDK tells the server (``notifications/cancelled``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.types import CONNECTION_CLOSED, CallToolResult, ToolListChangedNotification

from agent.retries import doubling, nth_wait
from agent.tools.mcp.results import ERROR_PREFIX
from agent.tools.mcp.spec import McpServerSpec, McpToolInfo
from agent.tools.mcp.stderr import stderr_logged
from agent.tools.mcp.tool_lists import ToolListKeeper

log = logging.getLogger(__name__)

ConnectionState = Literal["starting", "ready", "reconnecting", "closed"]

RECONNECT_BACKOFF = doubling(0.5, 60.0)
"""Pauses between reconnects: quick after a blip, at most a minute while a server stays down."""
HEALTH_CHECK_TIMEOUT_SECONDS = 5.0
"""After a timed-out call the server is asked for its tools (``ping`` is gone from the 2026
protocol): no answer in this time and it is restarted."""
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The SDK's own HTTP timeouts: a server may hold a response stream open for minutes."""


class ConnectionLost(Exception):
    """The server went away under a call; the owner reconnects."""


Answer = CallToolResult | str
"""What a call gets: the server's result, or an error text (server down, no answer in time)."""


def _new_future() -> asyncio.Future[Answer]:
    return asyncio.get_running_loop().create_future()


@dataclass(eq=False, slots=True)
class _Call:
    tool: str
    arguments: dict[str, Any]
    answer: asyncio.Future[Answer] = field(default_factory=_new_future)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """The owner task runs the call inside it; the caller cancels it when it is cancelled."""


class McpConnection:
    """A server's connection and its last tool list; :meth:`call` from any task."""

    def __init__(self, spec: McpServerSpec, keeper: ToolListKeeper | None = None) -> None:
        self.spec = spec
        self.keeper = keeper if keeper is not None else ToolListKeeper()
        """Where the server's last tool list is kept across restarts."""
        self.state: ConnectionState = "starting"
        self.last_error: str | None = None
        """Why the server is not ready (no secret in it: the type and message of the failure)."""
        self.tools: list[McpToolInfo] | None = None
        """The tools of the last listing (None: never listed)."""
        self.listed = asyncio.Event()
        """Set once the first connection attempt ended, in success or failure."""
        self.connections = 0
        """How many times the server was connected (tests wait for a reconnect)."""
        self.listings = 0
        """How many times the server's tools were listed (tests wait for a new listing)."""
        self._connected = asyncio.Condition()
        self._tools_changed = asyncio.Event()
        """Set by the server's ``tools/list_changed``: the owner task lists the tools again."""
        self._calls: asyncio.Queue[_Call] = asyncio.Queue()
        self._in_flight: set[_Call] = set()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def known_tools(self) -> list[McpToolInfo] | None:
        """The tools of the last listing, this run or (server not listed yet) a previous one;
        None when the server never listed its tools."""
        if self.tools is not None:
            return self.tools
        return self.keeper.stored(self.name)

    def start(self) -> None:
        """Start the owner task (connects in the background)."""
        if self._task is None:
            self._task = asyncio.create_task(self._own(), name=f"mcp:{self.name}")

    async def aclose(self) -> None:
        """Stop the owner task; the client is closed by the task that opened it."""
        self.state = "closed"
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._fail_queued("the server was shut down")

    async def wait_listed(self, times: int) -> None:
        """Return once the server's tools have been listed ``times`` times."""
        async with self._connected:
            await self._connected.wait_for(lambda: self.listings >= times)

    async def wait_connected(self, times: int = 1) -> None:
        """Return once the server has been connected ``times`` times and is ready."""
        async with self._connected:
            await self._connected.wait_for(
                lambda: self.connections >= times and self.state == "ready"
            )

    async def call(self, tool: str, arguments: dict[str, Any]) -> Answer:
        """The server's result, or an error text (at once when the server is down, after
        ``timeout_seconds`` when it does not answer)."""
        if self.state != "ready":
            return self._unavailable()
        request = _Call(tool, arguments)
        self._calls.put_nowait(request)
        timeout = self.spec.timeout_seconds
        try:
            return await asyncio.wait_for(asyncio.shield(request.answer), timeout)
        except TimeoutError:
            request.answer.cancel()
            return f"{ERROR_PREFIX}{self.name}__{tool} did not answer within {timeout:g} s"
        except asyncio.CancelledError:
            # The turn was stopped: the server stops too instead of working on for nobody.
            request.answer.cancel()
            request.scope.cancel()
            raise

    def _unavailable(self) -> str:
        cause = f" ({self.last_error})" if self.last_error else ""
        return (
            f"{ERROR_PREFIX}the {self.name} tool server is unavailable right now{cause}; "
            "it is being restarted in the background, try again later"
        )

    # -- the owner task ------------------------------------------------------------------
    async def _own(self) -> None:
        failures = 0
        while True:
            try:
                async with self._client() as client:
                    await self._list_tools(client)
                    await self.keeper.listed(self.name, self.tools or [])
                    self.connections += 1
                    failures = 0
                    self.state, self.last_error = "ready", None
                    self.listed.set()
                    async with self._connected:
                        self._connected.notify_all()
                    log.info("MCP server %s ready (%d tools)", self.name, len(self.tools or []))
                    await self._serve(client)
            except Exception as exc:  # any failure of the server: log, retry; never give up
                failures += 1
                self._note_failure(exc, failures)
            self.state = "reconnecting"
            self.listed.set()
            for request in list(self._in_flight):
                _settle(request, self._lost_text())
            self._fail_queued(self._unavailable())
            await asyncio.sleep(nth_wait(RECONNECT_BACKOFF, failures))

    def _client(self) -> contextlib.AbstractAsyncContextManager[Client]:
        spec = self.spec
        if spec.command is not None:
            return _stdio_client(spec, self._on_message)
        return _http_client(spec, self._on_message)

    async def _list_tools(self, client: Client) -> None:
        tools: list[McpToolInfo] = []
        cursor: str | None = None
        while True:
            listing = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools += [
                McpToolInfo(t.name, t.description or "", dict(t.input_schema))
                for t in listing.tools
            ]
            cursor = listing.next_cursor
            if not cursor:
                break
        self.tools = tools
        self.listings += 1
        async with self._connected:
            self._connected.notify_all()

    async def _on_message(self, message: IncomingMessage) -> None:
        """A server notification (pre-2026 servers send ``tools/list_changed`` this way)."""
        if isinstance(message, ToolListChangedNotification):
            self._tools_changed.set()

    async def _listen_for_changes(self, client: Client) -> None:
        """2026 servers announce a changed tool list on a ``subscriptions/listen`` stream."""
        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _event in changes:
                    self._tools_changed.set()
        except ListenNotSupportedError:
            return  # an older server: its notifications reach _on_message
        except (SubscriptionLost, MCPError) as exc:
            log.debug("MCP server %s: change stream ended (%s)", self.name, _cause(exc))

    async def _relist_on_change(self, client: Client) -> None:
        """List the tools again after each change; sessions take the new list at their next
        cold point (see :class:`agent.tools.mcp.provider.SessionTools`)."""
        while True:
            await self._tools_changed.wait()
            self._tools_changed.clear()
            await self._list_tools(client)
            await self.keeper.listed(self.name, self.tools or [])
            log.info("MCP server %s changed its tools (%d now)", self.name, len(self.tools or []))

    async def _serve(self, client: Client) -> None:
        """Answer calls until the connection is lost (raises :class:`ConnectionLost`)."""
        async with anyio.create_task_group() as calls:
            calls.start_soon(self._listen_for_changes, client)
            calls.start_soon(self._relist_on_change, client)
            while True:
                request = await self._calls.get()
                if not request.answer.done():
                    calls.start_soon(self._answer, client, request)

    async def _answer(self, client: Client, request: _Call) -> None:
        self._in_flight.add(request)
        try:
            await self._answer_call(client, request)
        finally:
            self._in_flight.discard(request)

    async def _answer_call(self, client: Client, request: _Call) -> None:
        with request.scope:  # cancelled by the caller: the SDK sends ``notifications/cancelled``
            await self._run_call(client, request)

    async def _run_call(self, client: Client, request: _Call) -> None:
        try:
            with anyio.fail_after(self.spec.timeout_seconds):
                result = await client.call_tool(request.tool, request.arguments)
        except TimeoutError:
            await self._check_alive(client)
            return
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                _settle(request, self._lost_text())
                raise ConnectionLost(exc.error.message) from None
            _settle(request, f"{ERROR_PREFIX}{exc.error.message}")
            return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            _settle(request, self._lost_text())
            raise ConnectionLost(type(exc).__name__) from None
        _settle(request, result)

    async def _check_alive(self, client: Client) -> None:
        """After a timed-out call: a server that does not answer a listing is restarted."""
        try:
            with anyio.fail_after(HEALTH_CHECK_TIMEOUT_SECONDS):
                await client.list_tools(cache_mode="bypass")
        except (TimeoutError, MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ConnectionLost("the server stopped answering") from None

    def _lost_text(self) -> str:
        return (
            f"{ERROR_PREFIX}the {self.name} tool server went away during the call; "
            "it is being restarted in the background"
        )

    def _note_failure(self, exc: Exception, failures: int) -> None:
        """Log once per outage (the first failure), at DEBUG after that."""
        self.last_error = _cause(exc)
        level = logging.WARNING if failures == 1 else logging.DEBUG
        verb = "could not start" if self.connections == 0 else "lost its connection"
        log.log(level, "MCP server %s %s: %s (retrying)", self.name, verb, self.last_error)

    def _fail_queued(self, text: str) -> None:
        while not self._calls.empty():
            _settle(self._calls.get_nowait(), text)


def _settle(request: _Call, answer: Answer) -> None:
    if not request.answer.done():
        request.answer.set_result(answer)


def _cause(exc: BaseException) -> str:
    """The innermost failure's type and message (task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@contextlib.asynccontextmanager
async def _stdio_client(
    spec: McpServerSpec, on_message: MessageHandlerFnT
) -> AsyncIterator[Client]:
    assert spec.command is not None
    params = StdioServerParameters(
        command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=spec.cwd
    )
    async with (
        stderr_logged(spec.name) as errlog,
        Client(stdio_client(params, errlog=errlog), message_handler=on_message) as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def _http_client(spec: McpServerSpec, on_message: MessageHandlerFnT) -> AsyncIterator[Client]:
    assert spec.url is not None
    async with (
        httpx2.AsyncClient(headers=spec.headers, timeout=HTTP_TIMEOUT) as http,
        Client(
            streamable_http_client(spec.url, http_client=http), message_handler=on_message
        ) as client,
    ):
        yield client

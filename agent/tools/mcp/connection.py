"""One MCP server's connection, owned by one long-lived task.

The SDK's client lives in anyio cancel scopes that must be exited by the task that entered them,
so one task per server enters the client, lists the tools, serves calls handed to it through a
queue (each answered through a future), and on any loss of the connection reconnects, at once
the first time, then with a doubling backoff, for as long as the process runs: nothing ever
parks a server. The handshake and first listing must end within ``startup_timeout_seconds``.
Callers never wait on a server that is down: the transport's watch
(:class:`~agent.tools.mcp.watch.TransportWatch`: a stdio process that exited, an HTTP request
refused) ends the connection and answers the calls in flight with an error text at once, and a
call slower than the server's ``timeout_seconds`` returns one in time. A caller cancelled
mid-call (``/stop``) cancels the call in the owner task too, and the SDK tells the server
(``notifications/cancelled``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from mcp import Client, MCPError
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.types import CONNECTION_CLOSED, CallToolResult, ToolListChangedNotification

from agent.retries import doubling, nth_wait
from agent.tools.mcp.names import model_tool_name
from agent.tools.mcp.redact import redacted
from agent.tools.mcp.results import ERROR_PREFIX
from agent.tools.mcp.spec import McpServerSpec, McpToolInfo
from agent.tools.mcp.stdio import spec_secrets
from agent.tools.mcp.tool_lists import ToolListKeeper
from agent.tools.mcp.transports import server_client
from agent.tools.mcp.watch import TransportWatch
from agent.tools.tool_schemas import tool_name_problem

log = logging.getLogger(__name__)

ConnectionState = Literal["starting", "ready", "reconnecting", "closed"]

HTTP_RECONNECT_BACKOFF = doubling(0.5, 2.0)
"""Pauses between reconnects to an HTTP server after the first (immediate) one: a refused
connection costs nothing, so a server that listens again is back within seconds."""
STABLE_CONNECTION_SECONDS = 10.0
"""A connection that lasted this long ended a new outage; a shorter one (a server that lists
its tools and crashes) keeps the backoff growing instead of restarting it in a tight loop."""
STDIO_RECONNECT_BACKOFF = doubling(0.5, 30.0)
"""Pauses between restarts of a stdio server after the first (immediate) one: each starts a
process, so a server that keeps failing is tried twice a minute at most."""
CLOSE_SECONDS = 10.0
"""How long :meth:`McpConnection.aclose` waits for the cancelled owner task (closing stdin,
the grace to exit, then the process group killed take ~5 s at most) before it cancels it once
more: a cancellation absorbed by a cancel scope must not hang a shutdown. Not sooner: a second
cancel would cut the shielded stop of the server's process short."""
CLOSE_AGAIN_SECONDS = 2.0
"""After the second cancel, how long before the task is left behind (with a warning)."""
HEALTH_CHECK_TIMEOUT_SECONDS = 5.0
"""After a timed-out call the server is asked for its tools (``ping`` is gone from the 2026
protocol): no answer in this time and it is restarted."""


class ConnectionLost(Exception):
    """The server went away under a call; the owner reconnects."""


class HandshakeTimeout(Exception):
    """The server did not finish the handshake and listing in ``startup_timeout_seconds``."""


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
        self._watch = TransportWatch()
        """The current connection attempt's findings (junk on stdout so far)."""
        self._failed: TransportWatch | None = None
        """The last failed attempt's findings (exit code, stderr lines); None once ready."""

    @property
    def name(self) -> str:
        """The server's configured name."""
        return self.spec.name

    def failure_details(self) -> list[str]:
        """Why the server is not ready beyond :attr:`last_error`: the failed attempt's exit code
        and last stderr lines (secrets masked); when ready, the junk it printed on stdout."""
        if self.state != "ready" and self._failed is not None:
            return self._failed.details()
        return self._watch.junk_note()

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
        """Stop the owner task; the client is closed by the task that opened it. Bounded (see
        :data:`CLOSE_SECONDS`): a task that will not end is left behind, with a warning."""
        self.state = "closed"
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_SECONDS)
            if not task.done():
                log.warning("MCP server %s: not closed after %g s", self.name, CLOSE_SECONDS)
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_AGAIN_SECONDS)
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: the owner logged its own failures
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
            self._watch = watch = TransportWatch()
            connections, started = self.connections, asyncio.get_running_loop().time()
            try:
                await self._connect_and_serve(watch)
            except Exception as exc:  # any failure of the server: log, retry; never give up
                lasted = asyncio.get_running_loop().time() - started
                if self.connections > connections and lasted >= STABLE_CONNECTION_SECONDS:
                    failures = 0  # a new outage: the first reconnect is immediate again
                failures += 1
                self._failed = watch
                self._note_failure(watch.cause or _cause(exc), failures)
            self.state = "reconnecting"
            self.listed.set()
            for request in list(self._in_flight):
                _settle(request, self._lost_text())
            self._fail_queued(self._unavailable())
            await asyncio.sleep(self._reconnect_wait(failures))

    def _reconnect_wait(self, failures: int) -> float:
        """No pause after a first failure (a blip, a restart), then a doubling backoff."""
        if failures <= 1:
            return 0.0
        backoff = STDIO_RECONNECT_BACKOFF if self.spec.command else HTTP_RECONNECT_BACKOFF
        return float(nth_wait(backoff, failures - 1))

    async def _connect_and_serve(self, watch: TransportWatch) -> None:
        """Connect, list, serve calls until the connection is lost; the handshake and first
        listing must end within ``startup_timeout_seconds`` (else :class:`HandshakeTimeout`)."""
        timeout = self.spec.startup_timeout_seconds
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as handshake:
            async with server_client(self.spec, self._on_message, watch) as client:
                await self._list_tools(client)
                handshake.deadline = math.inf
                await self._ready()
                await self._serve(client, watch)
        if handshake.cancelled_caught:
            raise HandshakeTimeout(f"no answer to the handshake within {timeout:g} s")

    async def _ready(self) -> None:
        await self.keeper.listed(self.name, self.tools or [])
        self.connections += 1
        self.state, self.last_error, self._failed = "ready", None, None
        self.listed.set()
        async with self._connected:
            self._connected.notify_all()
        log.info("MCP server %s ready (%s)", self.name, _count(len(self.tools or []), "tool"))

    async def _list_tools(self, client: Client) -> None:
        tools: list[McpToolInfo] = []
        cursor: str | None = None
        while True:
            listing = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools += [
                McpToolInfo(
                    t.name, t.description or "", dict(t.input_schema), self._model_name(t.name)
                )
                for t in listing.tools
            ]
            cursor = listing.next_cursor
            if not cursor:
                break
        self.tools = tools
        self.listings += 1
        async with self._connected:
            self._connected.notify_all()

    def _model_name(self, tool: str) -> str:
        """The tool's model name as kept with the server's list, else a new one."""
        kept = {t.name: t.model_name for t in self.known_tools() or []}
        name = kept.get(tool) or ""
        return name if tool_name_problem(name) is None else model_tool_name(self.name, tool)

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
            tools = _count(len(self.tools or []), "tool")
            log.info("MCP server %s changed its tools (%s now)", self.name, tools)

    async def _serve(self, client: Client, watch: TransportWatch) -> None:
        """Answer calls until the connection is lost (raises :class:`ConnectionLost`), also
        while idle: the transport's watch says when the server is gone."""
        async with anyio.create_task_group() as calls:
            calls.start_soon(self._raise_when_lost, watch)
            calls.start_soon(self._listen_for_changes, client)
            calls.start_soon(self._relist_on_change, client)
            while True:
                request = await self._calls.get()
                if not request.answer.done():
                    calls.start_soon(self._answer, client, request)

    async def _raise_when_lost(self, watch: TransportWatch) -> None:
        """Once the transport knows the server is gone, answer the calls in flight at once
        (closing the client may take a while) and end the connection."""
        await watch.lost.wait()
        self.state = "reconnecting"
        self.last_error = redacted(watch.cause or "the server went away", spec_secrets(self.spec))
        for request in list(self._in_flight):
            _settle(request, self._lost_text())
        raise ConnectionLost(watch.cause or "the server went away")

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
            if self.spec.url is not None:  # an HTTP server that errs: is it still there?
                await self._check_alive(client)
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

    def _note_failure(self, cause: str, failures: int) -> None:
        """Log once per outage (the first failure), at DEBUG after that."""
        self.last_error = redacted(cause, spec_secrets(self.spec))
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


def _count(n: int, noun: str) -> str:
    """``1 tool``, ``3 tools``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"

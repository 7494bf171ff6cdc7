"""Session management shared by ``hermes chat`` and the gateway: loading and eviction."""

from __future__ import annotations

import logging
from collections import OrderedDict

from agent.reply_stream import ReplyObserver
from agent.session import TurnSource
from agent.tools.approvals import ApprovalPort
from agent.types import UserContent
from gateway.sessions.runtime import SessionAddress, SessionRuntime, TurnReply
from gateway.sessions.services import AgentServices
from gateway.sessions.session_memory import BYTES_PER_MB, loaded_context_bytes

log = logging.getLogger(__name__)

DEFAULT_MAX_LOADED_SESSIONS = 256
"""Sessions kept in memory; older ones are dropped and reloaded from the store on demand."""
DEFAULT_MAX_LOADED_BYTES = 128 * BYTES_PER_MB
"""Memory the loaded sessions may hold (``gateway.loaded_sessions_max_mb``), estimated by
:mod:`gateway.sessions.session_memory`."""


class SessionManager:
    """Finds or loads the runtime of a session key (commands use it: :mod:`gateway.commands`).

    Loaded runtimes are kept least recently used first, bounded in number (``max_loaded``) and
    in estimated memory (``max_loaded_bytes``); the one just asked for always stays. A session's
    size is taken when it is asked for and after each of its turns.
    """

    def __init__(
        self,
        services: AgentServices,
        *,
        max_loaded: int = DEFAULT_MAX_LOADED_SESSIONS,
        max_loaded_bytes: int = DEFAULT_MAX_LOADED_BYTES,
    ):
        self.services = services
        self.max_loaded = max_loaded
        self.max_loaded_bytes = max_loaded_bytes
        self._loaded: OrderedDict[str, SessionRuntime] = OrderedDict()
        self._sizes: dict[str, int] = {}
        """Each loaded session's estimated bytes, as last taken."""
        self.loaded_bytes = 0
        """The sum of :attr:`_sizes`: what the loaded sessions are estimated to hold."""
        self.forget_requests: dict[str, float] = {}
        """``/forget`` asked, by user key: when (monotonic), awaiting ``/forget confirm``."""

    async def get(self, address: SessionAddress) -> SessionRuntime:
        """The loaded runtime for the address's active session (loading it if needed)."""
        runtime = self._loaded.get(address.key)
        if runtime is not None:
            self._loaded.move_to_end(address.key)
            self._measure(address.key, runtime)
            await self._evict()
            return runtime
        runtime = await SessionRuntime.open(self.services, address)
        await self._remember(address.key, runtime)
        return runtime

    async def _remember(self, key: str, runtime: SessionRuntime) -> None:
        self._loaded[key] = runtime
        self._measure(key, runtime)
        await self._evict()

    def _measure(self, key: str, runtime: SessionRuntime) -> None:
        size = loaded_context_bytes(runtime.context)
        self.loaded_bytes += size - self._sizes.get(key, 0)
        self._sizes[key] = size

    def _drop(self, key: str) -> SessionRuntime | None:
        self.loaded_bytes -= self._sizes.pop(key, 0)
        return self._loaded.pop(key, None)

    async def _evict(self) -> None:
        """Unload the least recently used sessions while over either bound (never the newest)."""
        while len(self._loaded) > 1 and (
            len(self._loaded) > self.max_loaded or self.loaded_bytes > self.max_loaded_bytes
        ):
            old = self._drop(next(iter(self._loaded)))
            if old is not None:
                await old.close()

    def forget(self, key: str) -> None:
        """Drop a session from memory (it stays in the store)."""
        self._drop(key)

    @property
    def loaded_count(self) -> int:
        return len(self._loaded)

    async def unload(self, key: str) -> None:
        """Close a session's runtime and drop it from memory (it stays in the store)."""
        old = self._drop(key)
        if old is not None:
            await old.close()

    async def reopen(self, address: SessionAddress) -> SessionRuntime:
        """Load the address's session again from the store (after its model changed)."""
        await self.unload(address.key)
        return await self.get(address)

    async def new_session(self, address: SessionAddress) -> SessionRuntime:
        """Close the active session for the key and start a fresh one."""
        await self.unload(address.key)
        runtime = await SessionRuntime.open(self.services, address, fresh=True)
        await self._remember(address.key, runtime)
        return runtime

    async def run_turn(
        self,
        address: SessionAddress,
        text: UserContent,
        *,
        source: TurnSource | None = None,
        sent_at: float | None = None,
        observer: ReplyObserver | None = None,
        approvals: ApprovalPort | None = None,
    ) -> TurnReply:
        """One turn of the address's session, loaded if needed (``hermes chat`` and tests; the
        gateway holds the runtime already): see :meth:`SessionRuntime.run_turn`."""
        runtime = await self.get(address)
        reply = await runtime.run_turn(
            address, text, source=source, sent_at=sent_at, observer=observer, approvals=approvals
        )
        if self._loaded.get(address.key) is runtime:
            self._measure(address.key, runtime)  # what the turn added
            await self._evict()
        return reply

    async def close(self) -> None:
        for runtime in self._loaded.values():
            await runtime.close()
        self._loaded.clear()
        self._sizes.clear()
        self.loaded_bytes = 0

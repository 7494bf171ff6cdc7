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

log = logging.getLogger(__name__)

DEFAULT_MAX_LOADED_SESSIONS = 256
"""Sessions kept in memory; older ones are dropped and reloaded from the store on demand."""


class SessionManager:
    """Finds or loads the runtime of a session key (commands use it: :mod:`gateway.commands`)."""

    def __init__(self, services: AgentServices, *, max_loaded: int = DEFAULT_MAX_LOADED_SESSIONS):
        self.services = services
        self.max_loaded = max_loaded
        self._loaded: OrderedDict[str, SessionRuntime] = OrderedDict()
        self.forget_requests: dict[str, float] = {}
        """``/forget`` asked, by user key: when (monotonic), awaiting ``/forget confirm``."""

    async def get(self, address: SessionAddress) -> SessionRuntime:
        """The loaded runtime for the address's active session (loading it if needed)."""
        runtime = self._loaded.get(address.key)
        if runtime is not None:
            self._loaded.move_to_end(address.key)
            return runtime
        runtime = await SessionRuntime.open(self.services, address)
        await self._remember(address.key, runtime)
        return runtime

    async def _remember(self, key: str, runtime: SessionRuntime) -> None:
        self._loaded[key] = runtime
        while len(self._loaded) > self.max_loaded:
            _, old = self._loaded.popitem(last=False)
            await old.close()

    def forget(self, key: str) -> None:
        """Drop a session from memory (it stays in the store)."""
        self._loaded.pop(key, None)

    @property
    def loaded_count(self) -> int:
        return len(self._loaded)

    async def unload(self, key: str) -> None:
        """Close a session's runtime and drop it from memory (it stays in the store)."""
        old = self._loaded.pop(key, None)
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
        return await runtime.run_turn(
            address, text, source=source, sent_at=sent_at, observer=observer, approvals=approvals
        )

    async def close(self) -> None:
        for runtime in self._loaded.values():
            await runtime.close()
        self._loaded.clear()

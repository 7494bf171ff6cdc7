"""Session management shared by ``hermes chat`` and the gateway: loading, commands, eviction."""

from __future__ import annotations

import gc
import logging
from collections import OrderedDict

from agent.prompt_caching import caching_status_line
from gateway.commands import HELP_TEXT, Command
from gateway.reports import status_text
from gateway.services import AgentServices
from gateway.session import SessionAddress, SessionRuntime, TurnReply, TurnSource
from gateway.usage_report import usage_report

log = logging.getLogger(__name__)

DEFAULT_MAX_LOADED_SESSIONS = 256
"""Sessions kept in memory; older ones are dropped and reloaded from the store on demand."""


class SessionManager:
    """Finds or loads the runtime of a session key and runs commands against it."""

    def __init__(self, services: AgentServices, *, max_loaded: int = DEFAULT_MAX_LOADED_SESSIONS):
        self.services = services
        self.max_loaded = max_loaded
        self._loaded: OrderedDict[str, SessionRuntime] = OrderedDict()

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
        # A loaded history lives as long as its session stays loaded: move it (and whatever
        # else is alive now) out of the cyclic collector's reach, so full collections do not
        # re-scan every loaded message. Reference counting still frees it when evicted.
        gc.freeze()
        while len(self._loaded) > self.max_loaded:
            _, old = self._loaded.popitem(last=False)
            await old.close()

    def forget(self, key: str) -> None:
        """Drop a session from memory (it stays in the store)."""
        self._loaded.pop(key, None)

    @property
    def loaded_count(self) -> int:
        return len(self._loaded)

    async def new_session(self, address: SessionAddress) -> SessionRuntime:
        """Close the active session for the key and start a fresh one."""
        old = self._loaded.pop(address.key, None)
        if old is not None:
            await old.close()
        runtime = await SessionRuntime.open(self.services, address, fresh=True)
        await self._remember(address.key, runtime)
        return runtime

    async def run_turn(
        self,
        address: SessionAddress,
        text: str,
        *,
        source: TurnSource | None = None,
        sent_at: float | None = None,
    ) -> TurnReply:
        """One user message through hygiene and the agent loop (see SessionRuntime.run_turn;
        ``sent_at``: platform time)."""
        runtime = await self.get(address)
        return await runtime.run_turn(text, source=source, sent_at=sent_at)

    async def run_command(self, address: SessionAddress, command: Command) -> str:
        """Execute a command (``/stop`` is the caller's: it knows what is running)."""
        if command.name == "help":
            return HELP_TEXT
        if command.name == "new":
            runtime = await self.new_session(address)
            return f"Started a new session (#{runtime.session_id}). The previous one stays stored."
        runtime = await self.get(address)
        if command.name == "compress":
            return await self._compress(runtime, command.argument)
        if command.name == "usage":
            return await usage_report(self.services.repo, runtime.session_id, self.services.model)
        if command.name == "status":
            return await self._status(runtime)
        return "Nothing is running."

    async def _compress(self, runtime: SessionRuntime, focus: str) -> str:
        result = await runtime.compress(focus or None)
        if result.outcome == "skipped":
            return f"Nothing to compact ({result.detail or 'the context is already small'})."
        text = (
            f"Compacted: {result.tokens_before:,} -> {result.tokens_after:,} tokens "
            f"({result.outcome})."
        )
        if result.user_notice:
            text += "\n" + result.user_notice
        return text

    async def _status(self, runtime: SessionRuntime) -> str:
        repo = self.services.repo
        return status_text(
            session_id=runtime.session_id,
            key=runtime.record.key,
            in_context=len(runtime.context),
            stored=await repo.count_messages(runtime.session_id),
            prompt_tokens=runtime.engine.last_prompt_tokens,
            context_length=self.services.context_length,
            engine_status=runtime.engine.get_status(),
            compactions=len(await repo.list_compactions(runtime.session_id)),
            caching_line=caching_status_line(self.services.cache_policy, runtime.policy.ttl),
            summary_line=self.services.summary_line,
        )

    async def close(self) -> None:
        for runtime in self._loaded.values():
            await runtime.close()
        self._loaded.clear()

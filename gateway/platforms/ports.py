"""The adapter contract in three parts, each the methods one kind of caller uses.

Every adapter subclasses :class:`~gateway.platforms.base.PlatformAdapter`, which implements
all three; a caller is annotated with the part it uses, so what it may do to a platform is
read at its signature (and a stand-in for tests needs only that part):

* :class:`MessageSource`: receiving, driven by the runner
  (:class:`gateway.runtime.gateway.Gateway`: start, stop, the files of received messages);
* :class:`ReplySender`: sending a reply's parts exactly once
  (:class:`gateway.delivery.deliverer.Deliverer`), including finding a part a crash left in
  doubt and turning the live messages of a reply into its parts;
* :class:`LiveSender`: showing a reply while it is written
  (:mod:`gateway.delivery.live_reply`).

The runner builds the adapters (:mod:`gateway.platforms.registry`) and is the one caller that
holds them whole: it hands each part on, and sends refusals and typing itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gateway.platforms.base import (
    DeliveryTarget,
    InboundCallback,
    LiveMode,
    SendFailure,
    VoiceNote,
)

if TYPE_CHECKING:
    from gateway.messages.media_items import MediaItem
    from gateway.platforms.base import PlatformAdapter

__all__ = ["LiveSender", "MessageSource", "ReplySender"]


@runtime_checkable
class MessageSource(Protocol):
    """A platform's receiving side: connect and hand messages over, stop, fetch their files."""

    @property
    def name(self) -> str: ...

    @property
    def failure(self) -> str | None: ...

    async def start(self, on_message: InboundCallback) -> str: ...

    async def stop_receiving(self) -> None: ...

    async def stop(self) -> None: ...

    def fail(self, reason: str) -> None: ...

    async def fetch_file(self, item: MediaItem) -> bytes: ...


@runtime_checkable
class ReplySender(Protocol):
    """Sending a reply's parts: split, send, edit or delete a sent part, classify failures,
    and find a part sent before a crash."""

    @property
    def name(self) -> str: ...

    def split(self, text: str, limit: int | None = None) -> list[str]: ...

    async def send_part(self, target: DeliveryTarget, text: str) -> str: ...

    @property
    def caption_limit(self) -> int: ...

    def measure(self, text: str) -> int: ...

    async def send_voice(self, target: DeliveryTarget, voice: VoiceNote, caption: str) -> str: ...

    async def edit_part(
        self, target: DeliveryTarget, message_id: str, text: str, *, formatted: bool
    ) -> None: ...

    async def delete_part(self, target: DeliveryTarget, message_id: str) -> None: ...

    def classify_send_error(self, error: Exception) -> SendFailure: ...

    async def find_sent(
        self, target: DeliveryTarget, text: str, after: str, known: frozenset[str]
    ) -> str | None: ...

    def anchor_of(self, platform_message_id: str) -> str: ...


@runtime_checkable
class LiveSender(Protocol):
    """Showing a reply while it is written: the chat's live mode, previews and drafts, edits."""

    @property
    def name(self) -> str: ...

    @property
    def message_limit(self) -> int: ...

    def measure(self, text: str) -> int: ...

    def split(self, text: str, limit: int | None = None) -> list[str]: ...

    def live_mode(self, target: DeliveryTarget) -> LiveMode | None: ...

    async def send_preview(self, target: DeliveryTarget, text: str) -> str: ...

    async def send_draft(self, target: DeliveryTarget, draft_id: int, text: str) -> None: ...

    async def edit_part(
        self, target: DeliveryTarget, message_id: str, text: str, *, formatted: bool
    ) -> None: ...


if TYPE_CHECKING:

    def _every_adapter_has_every_part(
        adapter: PlatformAdapter,
    ) -> tuple[MessageSource, ReplySender, LiveSender]:
        """mypy checks here that the base class implements each part."""
        return adapter, adapter, adapter

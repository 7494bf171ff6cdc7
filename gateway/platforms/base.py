"""What every platform adapter offers the runner: start, stop, send (split), typing.

An adapter owns its platform's client and wire formats; what crosses to the runner is an
:class:`~gateway.messages.inbound.InboundMessage` (through the callback given to :meth:`start`) and
plain reply text (through :meth:`send_part`).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.messages.inbound import InboundMessage
from gateway.messages.media_items import MediaItem, MediaUnavailable
from gateway.messages.quarantine import DeadLetter, QuarantineCallback
from gateway.text.split import split_message

log = logging.getLogger(__name__)

InboundCallback = Callable[[InboundMessage], Awaitable[None]]
"""The runner's entry point; it returns once the message is durably recorded."""
FatalCallback = Callable[[str, str], None]
"""Told (platform, reason) when an adapter stopped for good, e.g. its token was revoked."""
CatchUpSource = Callable[[], Awaitable[dict[str, str]]]
"""Returns the newest recorded message id per chat id (platform ids as strings)."""

ApprovalChoice = str
"""What an approval button stands for: ``once``, ``always`` or ``deny``."""
APPROVAL_CHOICES: tuple[tuple[ApprovalChoice, str], ...] = (
    ("once", "Allow once"),
    ("always", "Always in this chat"),
    ("deny", "Deny"),
)
"""The buttons of an approval prompt, in order: (choice, label)."""


@dataclass(frozen=True, slots=True)
class ApprovalPress:
    """Someone pressed a button of an approval prompt."""

    platform: str
    approval_id: str
    choice: ApprovalChoice
    user_id: str
    username: str | None = None


ApprovalCallback = Callable[[ApprovalPress], Awaitable[str | None]]
"""The runner's answer to a press: None when it was taken, else a short refusal to show."""


class PlatformAuthError(Exception):
    """The platform rejected the bot's credentials; the message names the variable, never the
    value. The adapter cannot work until someone replaces the token."""


@dataclass(frozen=True, slots=True)
class DeliveryTarget:
    """Where a reply goes: a chat, optionally a topic/thread within it."""

    chat_id: str
    thread_id: str | None = None

    @classmethod
    def of(cls, message: InboundMessage) -> DeliveryTarget:
        """Reply where the message was written."""
        return cls(message.chat_id, message.thread_id)


@dataclass(frozen=True, slots=True)
class SendFailure:
    """What a failed send means for delivery: retry it (``transient``) or give up."""

    reason: str
    """Short and free of message text and secrets: it is logged and stored."""
    transient: bool
    retry_after: float | None = None
    """Seconds the platform asked us to wait before the next attempt."""


@dataclass(frozen=True, slots=True)
class VoiceNote:
    """A voice message to send: OGG/Opus audio (48 kHz mono), how long it plays, its waveform."""

    ogg: bytes
    duration: float
    """Seconds of audio (Telegram's ``duration``, Discord's ``duration_secs``)."""
    waveform: str
    """Base64 of up to 256 loudness bytes (Discord's ``waveform``)."""


@dataclass(frozen=True, slots=True)
class LiveMode:
    """How a reply is shown in one chat while the model writes it
    (:mod:`gateway.delivery.live_reply`)."""

    drafts: bool
    """The growing end of the reply is an ephemeral draft (:meth:`PlatformAdapter.send_draft`,
    Telegram private chats) instead of a sent message edited as it grows."""
    interval: float
    """Seconds between two updates of the chat (the platform's flood limit for edits)."""


class CommandMenu(Protocol):
    """What an adapter needs of the runner's commands: which texts call one of them (a group
    message calling the bot's command is for the bot) and the menu a platform shows."""

    def parse(self, text: str, bot_username: str | None = None) -> object | None:
        """The call of a known command in ``text``, None for anything else."""

    def menu(self) -> list[tuple[str, str]]:
        """(name, description) of the commands everyone may use."""


class NoCommands:
    """The command menu of an adapter built without a runner (tests, probes): none."""

    def parse(self, text: str, bot_username: str | None = None) -> object | None:
        return None

    def menu(self) -> list[tuple[str, str]]:
        return []


@dataclass(frozen=True, slots=True)
class AdapterHooks:
    """What the runner hands an adapter when it builds it: where unreadable updates are kept,
    whom to tell when it stops for good, its commands, and where its catch-up starts."""

    quarantine: QuarantineCallback | None = None
    """Where updates that cannot be parsed or recorded are kept."""
    on_fatal: FatalCallback | None = None
    """Told when the adapter stopped receiving for good."""
    commands: CommandMenu = field(default_factory=NoCommands)
    """The commands the runner answers, for the platform's menu and addressing."""
    catch_up_from: CatchUpSource | None = None
    """Where the messages recorded before this run end, per chat. An adapter whose platform
    does not redeliver what was sent while the bot was offline reads the history after them;
    the others ignore it."""
    on_approval: ApprovalCallback | None = None
    """Told when someone presses an approval prompt's button."""
    send_gate: Callable[[], None] | None = None
    """Called before every request to the platform's API; raises to stop it (failover: a
    gateway that may no longer lead sends nothing, polls nothing)."""


NETWORK_ERRORS = (OSError, TimeoutError)
"""Failures below any platform client: worth another attempt."""


class PlatformAdapter(abc.ABC):
    """One chat platform, as the runner drives it.

    The runner holds it whole; the parts it hands on are typed with one part each of the
    contract (:mod:`gateway.platforms.ports`: receiving, sending replies, live replies).
    """

    name: str = ""
    """Platform name used in session keys and the inbound table ("telegram", "discord")."""
    message_limit: int = 0
    """Longest message the platform accepts, measured by :meth:`measure`."""
    typing_interval: float = 4.0
    """Seconds between typing indications (they expire on the platform after a few seconds)."""
    typing_delay: float = 0.0
    """Seconds a turn runs before the first typing indication: a quick reply needs none."""
    failure: str | None = None
    """Why the adapter stopped for good (None while it works)."""
    caption_limit: int = 0
    """Longest caption a voice message takes (measured by :meth:`measure`); 0: none, the
    text goes in a message of its own."""

    def __init__(self, hooks: AdapterHooks | None = None) -> None:
        hooks = hooks or AdapterHooks()
        self.quarantine = hooks.quarantine
        self.on_fatal = hooks.on_fatal
        self.commands = hooks.commands
        self.catch_up_from = hooks.catch_up_from
        self.on_approval = hooks.on_approval
        self.send_gate = hooks.send_gate

    @abc.abstractmethod
    async def start(self, on_message: InboundCallback) -> str:
        """Connect and start receiving; returns a description such as ``@name`` for the log."""

    @property
    def webhook_mode(self) -> bool:
        """Whether the platform POSTs updates to us (failover: standbys may receive some and
        keep them for the leader, :meth:`take_webhook_update`)."""
        return False

    async def take_webhook_update(self, data: dict[str, Any]) -> None:
        """Take in an update another host received by webhook, as if POSTed here."""
        raise NotImplementedError(f"{self.name} receives no webhook updates")

    async def stop_receiving(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Stop taking new messages; replies can still be sent until :meth:`stop`."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop receiving and close the connection (idempotent)."""

    @abc.abstractmethod
    async def send_part(self, target: DeliveryTarget, text: str) -> str:
        """Send one message that already fits :attr:`message_limit`; returns its platform id."""

    async def send_voice(self, target: DeliveryTarget, voice: VoiceNote, caption: str) -> str:
        """Send one voice message (``caption``: within :attr:`caption_limit`, or empty);
        returns its platform id. Adapters of platforms with voice messages override this."""
        raise NotImplementedError(f"{self.name} does not send voice messages")

    @abc.abstractmethod
    async def send_typing(self, target: DeliveryTarget) -> None:
        """Show the typing indicator once."""

    async def fetch_file(self, item: MediaItem) -> bytes:
        """The bytes of an attachment this platform announced (``item.file_id``).

        Raises :class:`MediaUnavailable` when they cannot be had; adapters that serve files
        override this.
        """
        raise MediaUnavailable(f"{self.name} does not serve files")

    def classify_send_error(self, error: Exception) -> SendFailure:
        """Whether a failed :meth:`send_part` may succeed later; adapters know their client's
        errors (this default retries only network-level failures)."""
        transient = isinstance(error, NETWORK_ERRORS)
        return SendFailure(f"{type(error).__name__}: {error}", transient=transient)

    async def keep_dead_letter(self, letter: DeadLetter) -> None:
        """Hand an update that cannot be handled to the runner's dead-letter table.

        Logs the safe reason once; raises when it could not be kept (the caller must then not
        move past the update).
        """
        if self.quarantine is None:
            raise RuntimeError(f"{self.name}: no dead-letter table to quarantine {letter.ref}")
        await self.quarantine(letter)
        log.warning("%s: update %s quarantined (%s)", self.name, letter.ref, letter.reason)

    def fail(self, reason: str) -> None:
        """Stop for good: log one ERROR with the reason and tell the runner (first time only)."""
        if self.failure is not None:
            return
        self.failure = reason
        log.error("%s: stopped: %s", self.name, reason)
        if self.on_fatal is not None:
            self.on_fatal(self.name, reason)

    async def find_sent(
        self, target: DeliveryTarget, text: str, after: str, known: frozenset[str]
    ) -> str | None:
        """The id of a message with ``text`` this bot sent to ``target`` after message
        ``after``, or None if there is none or the platform cannot tell (the default).

        Asked only about the one part a crash may have left in doubt (sent, but its id never
        recorded); ``known`` are ids of messages in the chat that are certainly not it.
        """
        return None

    # -- live replies (optional: an adapter whose live_mode is None never gets these calls) --

    def live_mode(self, target: DeliveryTarget) -> LiveMode | None:
        """How replies to ``target`` are shown while written; None: only when finished."""
        return None

    async def send_preview(self, target: DeliveryTarget, text: str) -> str:
        """Send an unfinished part as plain text (no formatting); returns its platform id."""
        raise NotImplementedError(f"{self.name} does not show live replies")

    async def edit_part(
        self, target: DeliveryTarget, message_id: str, text: str, *, formatted: bool
    ) -> None:
        """Replace the text of a sent part (``formatted``: the finished text, formatted with
        the plain-text fallback). An edit to the text it already has is no error."""
        raise NotImplementedError(f"{self.name} does not show live replies")

    async def delete_part(self, target: DeliveryTarget, message_id: str) -> None:
        """Delete a sent part (one already gone is no error)."""
        raise NotImplementedError(f"{self.name} does not show live replies")

    async def send_draft(self, target: DeliveryTarget, draft_id: int, text: str) -> None:
        """Show ``text`` as the ephemeral draft ``draft_id`` (adapters whose live mode uses
        drafts)."""
        raise NotImplementedError(f"{self.name} has no drafts")

    def anchor_of(self, platform_message_id: str) -> str:
        """A received message's id in the form :meth:`send_part` returns ids (the point after
        which the reply to it was sent)."""
        return platform_message_id

    def measure(self, text: str) -> int:
        """A text's length as the platform counts it (characters unless overridden)."""
        return len(text)

    def split(self, text: str, limit: int | None = None) -> list[str]:
        """The parts a reply is sent as, each within the platform's limit (or a smaller
        ``limit``, which leaves room for what a live reply adds to a part)."""
        return split_message(text, limit or self.message_limit, length=self.measure)

    async def send_approval(
        self, target: DeliveryTarget, tool: str, preview: str, approval_id: str
    ) -> str:
        """Post an approval prompt for a call of ``tool`` (``preview``: its arguments, bounded,
        not escaped yet) with the :data:`APPROVAL_CHOICES` buttons; returns its platform id."""
        raise NotImplementedError(f"{self.name}: approval prompts are not supported")

    async def close_approval(  # noqa: B027 - optional hook, no-op by default
        self, target: DeliveryTarget, message_id: str, outcome: str
    ) -> None:
        """Say how a prompt was answered and remove its buttons (idempotent)."""

    async def send(self, target: DeliveryTarget, text: str) -> list[str]:
        """Send a reply of any length; returns the platform ids of the messages sent."""
        return [await self.send_part(target, part) for part in self.split(text)]

    @contextlib.asynccontextmanager
    async def typing(
        self, target: DeliveryTarget, quiet: Callable[[], bool] | None = None
    ) -> AsyncIterator[None]:
        """Keep the typing indicator on while the body runs (skipped while ``quiet()`` says
        the chat is shown something else, such as a reply being written)."""
        task = asyncio.create_task(self._keep_typing(target, quiet))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep_typing(self, target: DeliveryTarget, quiet: Callable[[], bool] | None) -> None:
        # Saves a request per message (and the flood budget) when the reply is ready at once.
        if self.typing_delay > 0:
            await asyncio.sleep(self.typing_delay)
        while True:
            try:
                if quiet is None or not quiet():
                    await self.send_typing(target)
            except Exception as exc:
                log.debug("%s: typing indicator failed: %s", self.name, exc)
            await asyncio.sleep(self.typing_interval)

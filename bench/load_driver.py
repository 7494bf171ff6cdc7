"""The far side of the gateway load benchmark: the emulators and the people writing to the bot.

``bench/gateway_load.py`` runs this module as a second OS process, so that the Telegram and
Anthropic emulators and the simulated users do not share the gateway's CPU and event loop (in
production, Telegram's servers and the model API are remote). The two talk over pipes, one JSON
object per line: events go out on stdout, commands come in on stdin.

    out {"event": "ready", ...}   the emulators listen; what the gateway's config needs
    in  {"command": "go"}         the gateway is polling: the users start writing
    out {"event": "sent", ...}    every chat is done and the duplicate grace has passed
    in  {"command": "finish"}     the gateway has stopped
    out {"event": "final", ...}   everything the bot sent, how many model requests it made

Each chat writes its next message only after the reply to the previous one arrived; all chats
write at once. When stdin closes before ``finish`` the driver stops its emulators and exits 1.

    python -m bench.load_driver --chats 100 --messages 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.anthropic_replies import DEFAULT_REPLY_TOKENS as DEFAULT_REPLY_TOKENS
from sandbox.anthropic_summary import is_summary_request
from sandbox.telegram_api import TelegramEmulator

logger = logging.getLogger(__name__)

T = TypeVar("T")
Event = dict[str, Any]

READY = "ready"
SENT = "sent"
FINAL = "final"
GO = "go"
FINISH = "finish"
FIRST_CHAT_ID = 10_000
"""Chat (and user) id of the first benchmark chat; the others follow."""
REPLY_TIMEOUT_SECONDS = 60.0
"""How long one chat waits for one reply before counting the message as unanswered."""
WATCH_INTERVAL_SECONDS = 0.002
"""How often the reply watcher looks at what the bot sent (bounds latency resolution)."""
DUPLICATE_GRACE_SECONDS = 0.5
"""Quiet time after the last reply in which a wrong second answer would still show up."""
EXIT_PARENT_GONE = 1
BYTES_PER_MIB = 1024 * 1024
RU_MAXRSS_UNIT_BYTES = 1 if sys.platform == "darwin" else 1024  # Linux reports KiB


class ParentGone(Exception):
    """The parent closed stdin (or broke the protocol) before the run was finished."""


@dataclass(frozen=True)
class Endpoints:
    """The ``ready`` event: what the gateway's config needs to reach the emulators."""

    telegram_base_url: str
    telegram_base_file_url: str
    telegram_token: str
    anthropic_base_url: str

    def to_event(self) -> Event:
        """The JSON object the driver prints."""
        return {
            "event": READY,
            "telegram": {
                "base_url": self.telegram_base_url,
                "base_file_url": self.telegram_base_file_url,
                "token": self.telegram_token,
            },
            "anthropic": {"base_url": self.anthropic_base_url},
        }

    @classmethod
    def from_event(cls, event: Event) -> Endpoints:
        """Read a ``ready`` event back; KeyError when a field is missing."""
        telegram = event["telegram"]
        return cls(
            telegram_base_url=str(telegram["base_url"]),
            telegram_base_file_url=str(telegram["base_file_url"]),
            telegram_token=str(telegram["token"]),
            anthropic_base_url=str(event["anthropic"]["base_url"]),
        )


@dataclass
class SendingReport:
    """The ``sent`` event: how long the users waited and which messages they wrote."""

    latencies_ms: list[float]
    sending_seconds: float
    pushed: dict[int, list[int]]
    """Telegram message ids each chat wrote, in order."""
    problems: list[str]

    def to_event(self) -> Event:
        """The JSON object the driver prints (chat ids become string keys, as JSON wants)."""
        return {
            "event": SENT,
            "latencies_ms": self.latencies_ms,
            "sending_seconds": self.sending_seconds,
            "pushed": {str(chat_id): ids for chat_id, ids in self.pushed.items()},
            "problems": self.problems,
        }

    @classmethod
    def from_event(cls, event: Event) -> SendingReport:
        """Read a ``sent`` event back; KeyError/ValueError when it is malformed."""
        return cls(
            latencies_ms=[float(value) for value in event["latencies_ms"]],
            sending_seconds=float(event["sending_seconds"]),
            pushed={int(chat): [int(i) for i in ids] for chat, ids in event["pushed"].items()},
            problems=[str(problem) for problem in event["problems"]],
        )


@dataclass(frozen=True)
class BotMessage:
    """One message the bot sent to a chat."""

    message_id: int
    text: str


@dataclass
class FinalReport:
    """The ``final`` event: everything the bot sent, per chat, and what the model served."""

    sent: dict[int, list[BotMessage]]
    model_requests: int
    """Requests for answers (compaction summaries not counted)."""
    peak_rss_mib: float
    """The driver process's own peak resident set size."""
    summary_requests: int = 0
    """Requests for a compaction's summary."""

    def to_event(self) -> Event:
        """The JSON object the driver prints; each message as ``[message_id, text]``."""
        return {
            "event": FINAL,
            "sent": {
                str(chat_id): [[message.message_id, message.text] for message in messages]
                for chat_id, messages in self.sent.items()
            },
            "model_requests": self.model_requests,
            "peak_rss_mib": self.peak_rss_mib,
            "summary_requests": self.summary_requests,
        }

    @classmethod
    def from_event(cls, event: Event) -> FinalReport:
        """Read a ``final`` event back; KeyError/ValueError when it is malformed."""
        return cls(
            sent={
                int(chat): [BotMessage(int(message_id), str(text)) for message_id, text in sent]
                for chat, sent in event["sent"].items()
            },
            model_requests=int(event["model_requests"]),
            peak_rss_mib=float(event["peak_rss_mib"]),
            summary_requests=int(event.get("summary_requests", 0)),
        )


def message_text(chat_id: int, index: int) -> str:
    """A message whose marker comes back in the emulated model's reply ("Noted: ...")."""
    return f"chat {chat_id} message {index} about the weather"


def reply_marker(chat_id: int, index: int) -> str:
    """What the reply to message ``index`` of ``chat_id`` contains."""
    return f"chat {chat_id} message {index} "


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * RU_MAXRSS_UNIT_BYTES / BYTES_PER_MIB


class ReplyWatcher:
    """Tells each chat when its next reply arrived, watching the emulator in one task.

    One watcher instead of one ``wait_for_sent`` per chat: a hundred waiters woken on every API
    call would make the benchmark's own bookkeeping the bottleneck.
    """

    def __init__(self, telegram: TelegramEmulator) -> None:
        self._telegram = telegram
        self._seen = 0
        self.counts: defaultdict[int, int] = defaultdict(int)
        self._changed: defaultdict[int, asyncio.Event] = defaultdict(asyncio.Event)

    async def run(self) -> None:
        """Watch until cancelled."""
        while True:
            self.poll()
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)

    def poll(self) -> None:
        """Count replies sent since the last look and wake the chats that got one."""
        sent = self._telegram.sent_messages()
        for message in sent[self._seen :]:
            chat_id = message["chat_id"]
            self.counts[chat_id] += 1
            self._changed[chat_id].set()
        self._seen = len(sent)

    async def wait_for(self, chat_id: int, count: int) -> None:
        """Return once ``chat_id`` has received at least ``count`` replies."""
        while self.counts[chat_id] < count:
            event = self._changed[chat_id]
            event.clear()
            await event.wait()


async def _chat(
    chat_id: int,
    messages: int,
    telegram: TelegramEmulator,
    watcher: ReplyWatcher,
    report: SendingReport,
) -> None:
    """One person: write, wait for the answer, write again."""
    for index in range(messages):
        update = telegram.push_message(chat_id, message_text(chat_id, index), user_id=chat_id)
        report.pushed[chat_id].append(update["message"]["message_id"])
        started = time.perf_counter()
        try:
            async with asyncio.timeout(REPLY_TIMEOUT_SECONDS):
                await watcher.wait_for(chat_id, index + 1)
        except TimeoutError:
            report.problems.append(f"chat {chat_id}: no reply to message {index}")
            return
        report.latencies_ms.append((time.perf_counter() - started) * 1000)


async def simulate_users(telegram: TelegramEmulator, chats: int, messages: int) -> SendingReport:
    """The sending phase: every chat writes its messages, all chats at the same time."""
    chat_ids = [FIRST_CHAT_ID + offset for offset in range(chats)]
    report = SendingReport([], 0.0, {chat_id: [] for chat_id in chat_ids}, [])
    watcher = ReplyWatcher(telegram)
    watching = asyncio.create_task(watcher.run())
    started = time.perf_counter()
    try:
        await asyncio.gather(
            *(_chat(chat_id, messages, telegram, watcher, report) for chat_id in chat_ids)
        )
    finally:
        report.sending_seconds = time.perf_counter() - started
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    return report


def final_report(telegram: TelegramEmulator, anthropic: AnthropicEmulator) -> FinalReport:
    """Everything the bot sent, grouped by chat, and the number of model requests (answers and
    compaction summaries apart)."""
    sent: defaultdict[int, list[BotMessage]] = defaultdict(list)
    for message in telegram.sent_messages():
        sent[message["chat_id"]].append(BotMessage(message["message_id"], message.get("text", "")))
    summaries = sum(is_summary_request(r.last_user_text) for r in anthropic.requests)
    return FinalReport(dict(sent), len(anthropic.requests) - summaries, peak_rss_mib(), summaries)


class ParentLink:
    """The driver's end of the pipes: commands arrive on stdin, events leave on stdout.

    One task reads stdin, so an early close is noticed in every phase, also while the users are
    writing and nothing is expected from the parent.
    """

    def __init__(self, stdin: asyncio.StreamReader) -> None:
        self._stdin = stdin
        self._commands: asyncio.Queue[str | None] = asyncio.Queue()
        self._closed = asyncio.Event()
        self._reading = asyncio.create_task(self._read_commands())

    @classmethod
    async def open(cls) -> ParentLink:
        """Attach to this process's stdin."""
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        return cls(reader)

    async def _read_commands(self) -> None:
        while line := await self._stdin.readline():
            try:
                command = json.loads(line).get("command")
            except (json.JSONDecodeError, AttributeError):
                command = None
            await self._commands.put(str(command))
        self._closed.set()
        await self._commands.put(None)

    def emit(self, event: Event) -> None:
        """Print one event line (BrokenPipeError when the parent has gone)."""
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    async def expect(self, command: str) -> None:
        """Wait for ``command``; ParentGone on end of input or any other command."""
        received = await self._commands.get()
        if received is None:
            raise ParentGone(f"stdin closed while waiting for {command!r}")
        if received != command:
            raise ParentGone(f"expected {command!r}, got {received!r}")

    async def while_connected(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work``; cancel it and raise ParentGone if stdin closes first."""
        working = asyncio.ensure_future(work)
        closing = asyncio.ensure_future(self._closed.wait())
        try:
            done, _ = await asyncio.wait({working, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            if not working.done():
                working.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await working
        if working not in done:
            raise ParentGone("stdin closed while the users were writing")
        return working.result()

    async def close(self) -> None:
        """Stop reading stdin."""
        self._reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reading


@contextlib.asynccontextmanager
async def _emulators(
    reply_tokens: int = DEFAULT_REPLY_TOKENS,
) -> AsyncIterator[tuple[TelegramEmulator, AnthropicEmulator]]:
    """Both emulators, started; the model keeps no request bodies (a long run would hold every
    prompt) and pads its answers to about ``reply_tokens``."""
    async with (
        TelegramEmulator() as telegram,
        AnthropicEmulator(record_bodies=False, reply_tokens=reply_tokens) as anthropic,
    ):
        yield telegram, anthropic


async def drive(
    chats: int, messages: int, link: ParentLink, reply_tokens: int = DEFAULT_REPLY_TOKENS
) -> None:
    """The whole driver run, phase by phase as the module docstring lists them."""
    async with _emulators(reply_tokens) as (telegram, anthropic):
        endpoints = Endpoints(
            telegram.base_url, telegram.base_file_url, telegram.token, anthropic.base_url
        )
        link.emit(endpoints.to_event())
        await link.expect(GO)
        report = await link.while_connected(simulate_users(telegram, chats, messages))
        await link.while_connected(asyncio.sleep(DUPLICATE_GRACE_SECONDS))
        link.emit(report.to_event())
        await link.expect(FINISH)
        link.emit(final_report(telegram, anthropic).to_event())


async def _run(chats: int, messages: int, reply_tokens: int) -> int:
    link = await ParentLink.open()
    try:
        await drive(chats, messages, link, reply_tokens)
    except (ParentGone, BrokenPipeError) as error:
        logger.warning("load driver stopping early: %s", error or "the parent went away")
        return EXIT_PARENT_GONE
    finally:
        await link.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, required=True)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--reply-tokens", type=int, default=DEFAULT_REPLY_TOKENS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    status = asyncio.run(_run(args.chats, args.messages, args.reply_tokens))
    if status == EXIT_PARENT_GONE:
        # Python flushes stdout at exit; with the reader gone that would fail once more.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return status


if __name__ == "__main__":
    sys.exit(main())

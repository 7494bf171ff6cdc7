"""The scripted model of the overnight replay: the Anthropic emulator's reply function.

A turn's request is answered with the transcript's scripted reply for the message in flight (the
replay sends one message at a time, so that is always known). A compaction's summary request
("structured summary" in its last user text) is answered with a summary of realistic size:
the emulator's structured summary (its facts survive from one summary to the next), padded with
prose to ``SUMMARY_BASE_TOKENS + SUMMARY_SHARE x the request's prompt``, at most
``SUMMARY_CAP_TOKENS`` and the request's ``max_tokens``. Each summary carries a reference line
(``Summary reference C<conversation>-<n>``) so the replay can check that every summary request
contains the newest summary the daemon applied before it (an update, not a fresh start).

A turn with tool calls (the tool workload) is answered step by step: the first request of the
turn gets the first step's ``tool_use`` blocks, each request that brings a step's results gets
the next step, the last the reply. Which step a request is at is read from the request itself
(the ids of the tool results it ends with: ``toolu_c<conversation>t<turn>s<step>i<call>``), so a
compaction in the middle of a turn changes nothing. When a result was shortened (the daemon's
note names a ``tool_output`` ref), the model reads its second page before going on in
``PAGE_SHARE`` of the cases, as a model that needs the rest of a log would.

``summary_delay`` makes every summary request take that long (a slow summary model), so the
replay can measure how long a user waits for a compaction.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from bench.transcripts import ProseWriter, ToolCall
from sandbox.anthropic_prompt import count_prompt_tokens, message_blocks, text_tokens
from sandbox.anthropic_replies import Reply, last_user_message, request_seed, user_text
from sandbox.anthropic_summary import is_summary_request, structured_summary

SUMMARY_BASE_TOKENS = 500
SUMMARY_SHARE = 0.12
"""A summary grows with what it covers: about an eighth of the summary request's prompt..."""
SUMMARY_CAP_TOKENS = 2_000
"""...up to this (real summary models rarely write more for chat, whatever the budget)."""
_REFERENCE = re.compile(r"Summary reference C(\d+)-(\d+)")
PAGE_SHARE = 0.3
"""Of the steps that got a shortened result, the share after which the model reads page 2."""
_CLIPPED = re.compile(r'call tool_output with \{"ref": (\d+), "page": N\}')
_TOOL_ID = re.compile(r"toolu_c(\d+)t(\d+)s(\d+)(i\d+|p)")
TOOL_OUTPUT = "tool_output"


@dataclass(frozen=True)
class SummaryRequest:
    """One summary request: its conversation, its number there (from 1), and the numbers of
    that conversation's earlier summaries it contains."""

    conversation: int
    number: int
    contains: frozenset[int]


@dataclass
class SummaryLog:
    """What the scripted model saw of summary requests, in order."""

    requests: list[SummaryRequest] = field(default_factory=list)

    def next_number(self, conversation: int) -> int:
        """The number the conversation's next summary gets."""
        return 1 + sum(r.conversation == conversation for r in self.requests)

    def missing_previous(self, applied: set[tuple[int, int]]) -> int:
        """Requests that lack their conversation's newest earlier summary that was applied.

        ``applied`` holds the (conversation, number) of the summaries the daemon put into a
        context; a summary it never used (a skipped compaction) need not be updated.
        """
        missing = 0
        for request in self.requests:
            earlier = [
                number
                for conversation, number in applied
                if conversation == request.conversation and number < request.number
            ]
            if earlier and max(earlier) not in request.contains:
                missing += 1
        return missing


def summary_references(text: str) -> set[tuple[int, int]]:
    """The (conversation, number) of every summary reference in ``text``."""
    return {(int(c), int(n)) for c, n in _REFERENCE.findall(text)}


class ScriptedModel:
    """Reply function for `AnthropicEmulator(reply_fn=...)`; set `in_flight_turn` per message."""

    def __init__(self, *, summary_delay: float = 0.0) -> None:
        self.summary_delay = summary_delay
        self.reply = ""
        """The scripted reply to the message in flight."""
        self.steps: tuple[tuple[ToolCall, ...], ...] = ()
        """The tool calls the model makes for the message in flight, step by step."""
        self.turn = -1
        """The index of the message in flight in its conversation."""
        self.conversation = -1
        """The conversation of the message in flight (a first summary belongs to it)."""
        self.tool_uses = 0
        """Tool calls asked for, page reads included."""
        self.page_reads = 0
        self.in_flight = 0
        """Requests being answered right now (a slow summary included)."""
        self.summaries = SummaryLog()
        self._idle = asyncio.Event()
        self._idle.set()

    def expect(
        self,
        conversation: int,
        reply: str,
        *,
        turn: int = -1,
        steps: tuple[tuple[ToolCall, ...], ...] = (),
    ) -> None:
        """The next turn's requests make ``steps``' tool calls, then answer ``reply``."""
        self.conversation = conversation
        self.reply = reply
        self.turn = turn
        self.steps = steps

    async def settled(self) -> None:
        """Return once no request is being answered."""
        await self._idle.wait()

    async def __call__(self, body: dict[str, Any]) -> Reply | str:
        self.in_flight += 1
        self._idle.clear()
        try:
            if is_summary_request(user_text(last_user_message(body.get("messages", [])))):
                return await self._summary(body)
            return self._turn_reply(body.get("messages", []))
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

    def _turn_reply(self, messages: list[dict[str, Any]]) -> Reply | str:
        """The next step of the turn in flight: its tool calls, or the reply after the last."""
        if not self.steps:
            return self.reply
        done, paged, clipped = self._progress(messages)
        if done is not None and clipped is not None and not paged and self._pages(done):
            self.page_reads += 1
            return self._tool_use([(f"s{done}p", TOOL_OUTPUT, {"ref": clipped, "page": 2})])
        step = 0 if done is None else done + 1
        if step >= len(self.steps):
            return self.reply
        calls = [
            (f"s{step}i{i}", call.name, call.arguments()) for i, call in enumerate(self.steps[step])
        ]
        note = sum(call.note_tokens for call in self.steps[step])
        return self._tool_use(calls, self._note(step, note))

    def _progress(self, messages: list[dict[str, Any]]) -> tuple[int | None, bool, int | None]:
        """From the request's last message: the last step whose results it brings (None: the
        turn starts), whether those were a page read, and a shortened result's ref if any."""
        last = messages[-1] if messages else {}
        if last.get("role") != "user":
            return None, False, None
        results = [b for b in message_blocks(last.get("content")) if b.get("type") == "tool_result"]
        done: int | None = None
        paged = False
        clipped: int | None = None
        for block in results:
            found = _TOOL_ID.fullmatch(str(block.get("tool_use_id", "")))
            if found is None or (int(found[1]), int(found[2])) != (self.conversation, self.turn):
                continue
            done = max(done if done is not None else -1, int(found[3]))
            paged = paged or found[4] == "p"
            ref = _CLIPPED.search(_result_text(block.get("content")))
            if ref is not None and clipped is None:
                clipped = int(ref[1])
        return done, paged, clipped

    def _pages(self, step: int) -> bool:
        """Whether the model reads on after ``step``'s shortened result (deterministic)."""
        draw = random.Random(f"{self.conversation}:{self.turn}:{step}").random()
        return draw < PAGE_SHARE

    def _note(self, step: int, tokens: int) -> str:
        """The deterministic note the model writes before ``step``'s calls (empty: none)."""
        if tokens <= 0:
            return ""
        rng = random.Random(f"note:{self.conversation}:{self.turn}:{step}")
        return ProseWriter(rng).prose(tokens)

    def _tool_use(self, calls: list[tuple[str, str, dict[str, Any]]], note: str = "") -> Reply:
        self.tool_uses += len(calls)
        prefix = f"toolu_c{self.conversation}t{self.turn}"
        text = [{"type": "text", "text": note}] if note else []
        return Reply(
            content=[
                *text,
                *(
                    {"type": "tool_use", "id": f"{prefix}{suffix}", "name": name, "input": args}
                    for suffix, name, args in calls
                ),
            ],
            stop_reason="tool_use",
        )

    async def _summary(self, body: dict[str, Any]) -> str:
        references = summary_references(json.dumps(body))
        conversations = {conversation for conversation, _ in references}
        conversation = min(conversations) if len(conversations) == 1 else self.conversation
        number = self.summaries.next_number(conversation)
        contains = frozenset(n for c, n in references if c == conversation)
        self.summaries.requests.append(SummaryRequest(conversation, number, contains))
        if self.summary_delay:
            await asyncio.sleep(self.summary_delay)
        target = min(
            int(body.get("max_tokens", SUMMARY_CAP_TOKENS)),
            SUMMARY_CAP_TOKENS,
            round(SUMMARY_BASE_TOKENS + SUMMARY_SHARE * count_prompt_tokens(body)),
        )
        return summary_text(body, f"Summary reference C{conversation}-{number}", target)


def _result_text(content: Any) -> str:
    """A tool result's text (a string, or its text blocks joined)."""
    return "\n".join(str(b.get("text", "")) for b in message_blocks(content))


def summary_text(body: dict[str, Any], reference: str, target_tokens: int) -> str:
    """The emulator's structured summary with ``reference`` among its facts, padded with
    deterministic prose to about ``target_tokens`` tokens."""
    reference_line = f"- {reference}."
    text = structured_summary(body, max(1, target_tokens - text_tokens(reference_line) - 1))
    text = f"{text}\n{reference_line}"
    missing = target_tokens - text_tokens(text) - 1
    if missing > 0:
        writer = ProseWriter(random.Random(request_seed(body)))
        text = f"{text}\n{writer.prose(missing)}"
    return text

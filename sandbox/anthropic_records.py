"""What the Anthropic emulator remembers of the traffic it served: request records, totals."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sandbox.anthropic_prompt import DEFAULT_CACHE_TTL, Prompt, list_field, system_blocks
from sandbox.anthropic_replies import last_user_message, user_text


@dataclass(frozen=True)
class BreakpointInfo:
    """One cache breakpoint of a request: where it sat, its TTL, and the prefix size up to it."""

    location: str
    ttl: str
    prefix_tokens: int


@dataclass
class RequestRecord:
    """One ``POST /v1/messages`` call as the emulator saw and answered it.

    ``usage`` is the response's usage object (empty for refused requests); ``body`` is the raw
    request body; ``fault`` names the injected fault that answered it, if any.
    """

    model: str
    status: int
    usage: dict[str, Any]
    n_messages: int
    max_tokens: int | None
    system_text: str
    last_user_text: str
    breakpoints: list[BreakpointInfo]
    body: dict[str, Any]
    stream: bool = False
    prompt_tokens: int | None = None
    reply_text: str = ""
    stop_reason: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    fault: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (for the HTTP control API)."""
        return asdict(self)


@dataclass
class TrafficTotals:
    """Counters for a set of requests: outcomes and billed tokens."""

    requests: int = 0
    ok: int = 0
    rejected_400: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, status: int, usage: dict[str, Any], *, completed: bool) -> None:
        """Count one request; tokens count only for requests answered in full."""
        self.requests += 1
        if status == 400:
            self.rejected_400 += 1
        elif completed:
            self.ok += 1
        else:
            self.errors += 1
        if completed:
            self.input_tokens += int(usage.get("input_tokens", 0))
            self.output_tokens += int(usage.get("output_tokens", 0))
            self.cache_read_tokens += int(usage.get("cache_read_input_tokens", 0))
            self.cache_write_tokens += int(usage.get("cache_creation_input_tokens", 0))


@dataclass
class EmulatorStats(TrafficTotals):
    """Totals over every Messages request, also per model in ``by_model``.

    ``errors`` counts faults and other non-400 failures (a stream cut by an error event included);
    ``count_tokens_calls`` counts ``/v1/messages/count_tokens`` calls, which are not requests.
    """

    by_model: dict[str, TrafficTotals] = field(default_factory=dict)
    count_tokens_calls: int = 0

    def record(self, model: str, status: int, usage: dict[str, Any], *, completed: bool) -> None:
        """Count one Messages request in the totals and in its model's totals."""
        self.add(status, usage, completed=completed)
        self.by_model.setdefault(model, TrafficTotals()).add(status, usage, completed=completed)

    def to_dict(self) -> dict[str, Any]:
        """The stats as JSON-ready data (for the HTTP control API)."""
        return asdict(self)


def describe_request(body: dict[str, Any], status: int, prompt: Prompt | None) -> RequestRecord:
    """A fresh record of a request; breakpoints are listed once the request is validated."""
    messages = list_field(body, "messages")
    breakpoints = []
    if prompt is not None:
        breakpoints = [
            BreakpointInfo(
                prompt.blocks[index].location,
                prompt.blocks[index].cache_ttl or DEFAULT_CACHE_TTL,
                prompt.prefix_tokens[index],
            )
            for index in prompt.breakpoints
        ]
    max_tokens = body.get("max_tokens")
    return RequestRecord(
        model=str(body.get("model", "")),
        status=status,
        usage={},
        n_messages=len(messages),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        system_text="\n".join(str(b.get("text", "")) for b in system_blocks(body.get("system"))),
        last_user_text=user_text(last_user_message(messages)),
        breakpoints=breakpoints,
        body=body,
        stream=body.get("stream") is True,
    )

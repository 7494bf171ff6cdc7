"""Injected failures of the Anthropic emulator: which requests they hit and how they answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

FAULT_KINDS = (
    "429",
    "529",
    "500",
    "slow",
    "stream_error",
    "disconnect",
    "empty",
    "truncated",
    "cut",
    "malformed",
)
STREAM_ONLY_KINDS = frozenset({"stream_error", "truncated", "cut"})
"""Faults only a streamed response can show (non-streaming requests do not match them)."""
DEFAULT_RETRY_AFTER_SECONDS = 1.0

# (HTTP status, error type, message) of the faults answered with an error body.
ERROR_FAULTS: dict[str, tuple[int, str, str]] = {
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit."),
    "529": (529, "overloaded_error", "Overloaded"),
    "500": (500, "api_error", "Internal server error"),
}
STREAM_ERROR = ("overloaded_error", "Overloaded")


@dataclass
class Fault:
    """One injected fault and how many more matching requests it will hit."""

    kind: str
    remaining: int
    model: str | None = None
    contains: str | None = None
    retry_after: float | None = None
    delay: float = 0.0

    def matches(self, body: dict[str, Any], *, streaming: bool) -> bool:
        """Whether this fault applies to a request (stream faults only hit streams)."""
        if self.kind in STREAM_ONLY_KINDS and not streaming:
            return False
        if self.model is not None and body.get("model") != self.model:
            return False
        if self.contains is not None and self.contains not in searchable_text(body):
            return False
        return True


def searchable_text(body: dict[str, Any]) -> str:
    """The serialized messages and system of a request, which ``contains`` is matched against."""
    parts = {"system": body.get("system"), "messages": body.get("messages")}
    return json.dumps(parts, ensure_ascii=False, default=str)


class FaultPlan:
    """The queue of injected faults; the first matching one is used up by each request."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        """Queue a fault, refusing unknown kinds and non-positive counts."""
        if fault.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {fault.kind!r}; expected one of {FAULT_KINDS}")
        if fault.remaining < 1:
            raise ValueError(f"fault count must be at least 1, got {fault.remaining}")
        self._faults.append(fault)

    def take(self, body: dict[str, Any], *, streaming: bool) -> Fault | None:
        """The fault that hits this request, with its count used up by one, or None."""
        for fault in self._faults:
            if fault.matches(body, streaming=streaming):
                fault.remaining -= 1
                if fault.remaining == 0:
                    self._faults.remove(fault)
                return fault
        return None

    def clear(self) -> None:
        """Drop every pending fault."""
        self._faults.clear()

    @property
    def pending(self) -> list[Fault]:
        """Faults still waiting for a matching request."""
        return list(self._faults)

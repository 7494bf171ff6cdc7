"""What the built-in compressor keeps across restarts: :class:`CompressorState`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.types import EngineState


@dataclass(frozen=True, slots=True)
class CompressorState(EngineState):
    """The compressor's summary, counters, cooldown and loop guard, as stored with the session
    (``sessions.engine_state``; the keys are those rows have always had)."""

    previous_summary: str | None = None
    """The last summary, updated by the next compaction rather than written anew."""
    compression_count: int = 0
    cooldown_until: float = 0.0
    """Session time (epoch seconds) before which no summary is requested after a failure."""
    system_note_added: bool = False
    """Whether the system prompt already says that earlier turns were compacted."""
    stall_floor: int | None = None
    """The prompt size after a compaction that could not get under the threshold: no
    compaction again until the prompt grows past it."""
    last_outcome: str | None = None

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> CompressorState:
        """The state in ``stored`` (missing or mistyped keys keep their defaults)."""
        summary = stored.get("previous_summary")
        floor = stored.get("stall_floor")
        outcome = stored.get("last_outcome")
        return cls(
            previous_summary=summary if isinstance(summary, str) else None,
            compression_count=int(stored.get("compression_count") or 0),
            cooldown_until=float(stored.get("cooldown_until") or 0.0),
            system_note_added=bool(stored.get("system_note_added", False)),
            stall_floor=int(floor) if isinstance(floor, int | float) else None,
            last_outcome=outcome if isinstance(outcome, str) else None,
        )

"""What the lossless engine keeps with the session: :class:`LcmState` (the DAG has tables)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.types import EngineState


@dataclass(frozen=True, slots=True)
class LcmState(EngineState):
    """The engine's counters, as stored in ``sessions.engine_state``."""

    lcm_compactions: int = 0
    last_outcome: str | None = None

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> LcmState:
        """The state in ``stored`` (missing or mistyped keys keep their defaults)."""
        outcome = stored.get("last_outcome")
        return cls(
            lcm_compactions=int(stored.get("lcm_compactions") or 0),
            last_outcome=outcome if isinstance(outcome, str) else None,
        )

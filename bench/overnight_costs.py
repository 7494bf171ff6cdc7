"""Where the money of a replay went, from the emulator's own usage records.

Every Messages request the emulator answered is priced by its model's list prices (the model
table) and the documented cache multipliers (write 1.25x for 5m, 2x for 1h; read 0.1x), and put
in one bucket:

- ``summaries``: the whole cost of a compaction's summary request, whatever its model;
- for the main model's requests, ``visit_start_writes`` (cache writes of the requests that
  answer a visit's first message: the cold prefix written again), ``other_writes``, ``reads``,
  ``uncached`` (input after the last breakpoint) and ``output``.

The emulator's cache accounting is independent of the daemon's: nothing here reads what the
daemon believes it spent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from agent.model_table import TOKENS_PER_MTOK, lookup_model
from sandbox.anthropic_records import RequestRecord
from sandbox.anthropic_summary import is_summary_request

OK_STATUS = 200


@dataclass
class CostBreakdown:
    """USD per bucket (see the module docstring); `total` is their sum."""

    visit_start_writes: float = 0.0
    other_writes: float = 0.0
    reads: float = 0.0
    uncached: float = 0.0
    summaries: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        """Every bucket together."""
        return sum(getattr(self, f.name) for f in fields(self))

    def items(self) -> list[tuple[str, float]]:
        """(bucket name, USD) in report order."""
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


@dataclass(frozen=True)
class _Priced:
    uncached: float
    writes: float
    reads: float
    output: float


def _price(record: RequestRecord) -> _Priced:
    info = lookup_model(record.model)
    per_input = info.input_per_mtok / TOKENS_PER_MTOK
    usage: dict[str, Any] = record.usage
    split = usage.get("cache_creation") or {}
    written_1h = int(split.get("ephemeral_1h_input_tokens", 0))
    written_5m = int(usage.get("cache_creation_input_tokens", 0)) - written_1h
    return _Priced(
        uncached=int(usage.get("input_tokens", 0)) * per_input,
        writes=(
            written_5m * info.cache_write_5m_multiplier
            + written_1h * info.cache_write_1h_multiplier
        )
        * per_input,
        reads=int(usage.get("cache_read_input_tokens", 0)) * info.cache_read_multiplier * per_input,
        output=int(usage.get("output_tokens", 0)) * info.output_per_mtok / TOKENS_PER_MTOK,
    )


def is_summary(record: RequestRecord, main_model: str) -> bool:
    """Whether a request is a compaction's summary request (by its text, or another model)."""
    return is_summary_request(record.last_user_text) or record.model != main_model


def breakdown(
    records: Sequence[RequestRecord], visit_start: Sequence[bool], main_model: str
) -> CostBreakdown:
    """The cost of the answered requests; ``visit_start[i]`` says whether ``records[i]`` was
    made for a visit's first message."""
    costs = CostBreakdown()
    for record, at_visit_start in zip(records, visit_start, strict=True):
        if record.status != OK_STATUS or not record.usage:
            continue
        priced = _price(record)
        if is_summary(record, main_model):
            costs.summaries += priced.uncached + priced.writes + priced.reads + priced.output
            continue
        if at_visit_start:
            costs.visit_start_writes += priced.writes
        else:
            costs.other_writes += priced.writes
        costs.reads += priced.reads
        costs.uncached += priced.uncached
        costs.output += priced.output
    return costs

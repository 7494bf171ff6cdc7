"""The base of every configuration section: unknown keys are errors, assignments validated."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _fraction(value: float) -> float:
    if not 0 < value < 1:
        raise ValueError(f"must be between 0 and 1 (got {value})")
    return value


Fraction = Annotated[float, Field(strict=False)]
PositiveInt = Annotated[int, Field(gt=0)]

"""Platform adapters: each turns a chat platform's events into InboundMessages and sends replies.

The names below are imported on first use: the configuration imports the platform registry
(:mod:`gateway.platforms.registry`) and must not pull in the adapters' machinery with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.platforms.base import DeliveryTarget, InboundCallback, PlatformAdapter

__all__ = ["DeliveryTarget", "InboundCallback", "PlatformAdapter"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gateway.platforms import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

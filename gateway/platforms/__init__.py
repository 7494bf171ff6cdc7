"""Platform adapters: each turns a chat platform's events into InboundMessages and sends replies."""

from gateway.platforms.base import DeliveryTarget, InboundCallback, PlatformAdapter

__all__ = ["DeliveryTarget", "InboundCallback", "PlatformAdapter"]

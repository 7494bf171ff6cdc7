"""Which addresses ``web_fetch`` may connect to, checked after DNS resolution.

The check sits in the HTTP client's resolver, so the connection goes to exactly the address
that was checked (a second lookup by the client could answer differently: DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from agent.tools.registry import ToolError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
"""Whether a connection to an address is allowed (normally :func:`is_public_address`)."""


class BlockedAddressError(ToolError):
    """The URL's host is (or resolves to) a loopback, private, link-local, multicast or
    otherwise non-public address, and private addresses are not allowed."""


def is_public_address(address: IPAddress) -> bool:
    """True for a globally routable unicast address; False for loopback, private, link-local,
    multicast, reserved, unspecified and shared (carrier-grade NAT) ranges."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return is_public_address(address.ipv4_mapped)
    return address.is_global and not (
        address.is_multicast
        or address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_reserved
        or address.is_unspecified
    )


def literal_address(host: str) -> IPAddress | None:
    """The address when ``host`` is an IP literal (``127.0.0.1``, ``[::1]``), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def check_literal_host(host: str, allowed: AddressPolicy = is_public_address) -> None:
    """Refuse an IP-literal host that is not allowed (a name is checked when resolved)."""
    address = literal_address(host)
    if address is not None and not allowed(address):
        raise BlockedAddressError(_refusal(host, address))


def _refusal(host: str, address: IPAddress) -> str:
    return (
        f"refused to fetch from {host} ({address}): loopback, private, link-local and "
        "multicast addresses are not allowed"
    )


class PublicOnlyResolver(AbstractResolver):
    """Resolves like the default resolver, then keeps only the allowed (public) addresses;
    a host with none left is refused with :class:`BlockedAddressError`."""

    def __init__(self, allowed: AddressPolicy = is_public_address) -> None:
        self._resolver = DefaultResolver()
        self._allowed = allowed

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._resolver.resolve(host, port, family)
        public = [r for r in results if self._allowed(ipaddress.ip_address(r["host"]))]
        if not public:
            raise BlockedAddressError(_refusal(host, ipaddress.ip_address(results[0]["host"])))
        return public

    async def close(self) -> None:
        await self._resolver.close()

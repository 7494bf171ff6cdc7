"""The store and every adapter class implement the small protocols their consumers are typed
with (``gateway.store.ports``, ``gateway.platforms.ports``): every member there, a coroutine
where the protocol's is one, taking the same parameters (names, kinds, which have defaults).

mypy checks the same where the repository and the adapters are handed in; this keeps the
promise for the adapter classes mypy never sees passed anywhere, and names the missing method.
"""

from __future__ import annotations

import inspect
from typing import Any, Generic, Protocol

import pytest

from gateway.platforms.base import PlatformAdapter
from gateway.platforms.discord.adapter import DiscordAdapter
from gateway.platforms.ports import LiveSender, MessageSource, ReplySender
from gateway.platforms.telegram.adapter import TelegramAdapter
from gateway.store import ports
from gateway.store.repository import Repository
from tests.fixtures.memo_platform import MemoAdapter

STORE_PORTS = [
    ports.DeliveryStore,
    ports.LiveMessageStore,
    ports.GatewayStore,
    ports.InboundMarks,
    ports.AdmissionStore,
    ports.TurnStore,
    ports.LifecycleStore,
    ports.UserStore,
    ports.UsageReportStore,
    ports.RecorderStore,
    ports.SessionStore,
    ports.SessionHostStore,
    ports.CommandStore,
    ports.ServicesStore,
    ports.DashboardStore,
]
ADAPTER_PARTS = [MessageSource, ReplySender, LiveSender]
ADAPTER_CLASSES = [PlatformAdapter, TelegramAdapter, DiscordAdapter, MemoAdapter]


def protocol_members(protocol: type) -> dict[str, Any]:
    """Every member a protocol declares, its own and its base protocols': name -> the
    declared function or property (None for a plain annotated attribute)."""
    members: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if klass in (object, Protocol, Generic) or not getattr(klass, "_is_protocol", False):
            continue
        members.update(dict.fromkeys(vars(klass).get("__annotations__", {})))
        for name, value in vars(klass).items():
            if not name.startswith("_") and (callable(value) or isinstance(value, property)):
                members[name] = value
    return members


def shape(function: Any) -> list[tuple[str, Any, bool]]:
    """What a caller relies on: each parameter's name, kind and whether it has a default."""
    parameters = inspect.signature(function).parameters.values()
    return [(p.name, p.kind, p.default is not p.empty) for p in parameters]


def missing_or_different(implementation: type, protocol: type) -> list[str]:
    """The protocol's members the class lacks or implements with another shape."""
    problems = []
    for name, declared in protocol_members(protocol).items():
        if not hasattr(implementation, name):
            problems.append(f"{name}: missing")
            continue
        if declared is None or isinstance(declared, property):
            continue  # an attribute: a class attribute or a property of that name will do
        found = getattr(implementation, name)
        if inspect.iscoroutinefunction(declared) != inspect.iscoroutinefunction(found):
            problems.append(f"{name}: async in one, not in the other")
        elif shape(declared) != shape(found):
            problems.append(f"{name}: parameters {shape(found)} instead of {shape(declared)}")
    return problems


def test_members_of_a_protocol_include_its_base_protocols() -> None:
    members = protocol_members(ports.ServicesStore)
    assert {"load_context", "append_messages", "usage_breakdown", "forget_user"} <= set(members)
    assert "store" in members


@pytest.mark.parametrize("port", STORE_PORTS, ids=lambda port: port.__name__)
def test_the_repository_implements_every_store_port(port: type) -> None:
    assert missing_or_different(Repository, port) == []


@pytest.mark.parametrize("part", ADAPTER_PARTS, ids=lambda part: part.__name__)
@pytest.mark.parametrize("adapter", ADAPTER_CLASSES, ids=lambda adapter: adapter.__name__)
def test_every_adapter_class_implements_every_part_of_the_adapter_contract(
    adapter: type, part: type
) -> None:
    assert missing_or_different(adapter, part) == []


def test_a_class_without_a_port_method_is_caught() -> None:
    class DeliveryWithoutFailures:
        async def plan_reply(self, platform: str) -> None: ...

    problems = missing_or_different(DeliveryWithoutFailures, ports.DeliveryStore)
    assert "fail_reply: missing" in problems
    assert any(problem.startswith("plan_reply: parameters") for problem in problems)


def test_each_consumer_port_is_smaller_than_the_repository() -> None:
    """The point of the ports: no consumer depends on most of the store."""
    public = [name for name in dir(Repository) if not name.startswith("_")]
    for port in STORE_PORTS:
        assert len(protocol_members(port)) < len(public) / 2, port.__name__

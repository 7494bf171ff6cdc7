"""The command registry: parsing a call once, resolving names and aliases, /help text."""

from __future__ import annotations

import pytest

from gateway.commands import Command, CommandContext, CommandSpec, default_registry, parse_call
from gateway.messages.inbound import InboundMessage


async def _noop(ctx: CommandContext) -> str:
    return ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/foo bar", Command("foo", "bar")),
        ("  /Usage  ", Command("usage", "")),
        ("/new@hermes_bot", Command("new", "", "hermes_bot")),
        ("/compress\nthe trip", Command("compress", "the trip")),
        ("/etc/hosts", None),
        ("hello /new", None),
        ("/", None),
        ("/" + "x" * 33, None),
    ],
)
def test_any_well_formed_call_parses_known_or_not(text: str, expected: Command | None) -> None:
    assert parse_call(text) == expected


def test_a_message_carries_its_call_parsed_once_and_not_in_its_payload() -> None:
    message = InboundMessage("telegram", "1", "2", "/foo x", "1:5", "telegram:1")
    assert message.command == Command("foo", "x")
    assert "command" not in message.to_payload()
    assert InboundMessage.from_payload(message.to_payload()) == message
    assert InboundMessage.from_payload(message.to_payload()).command == Command("foo", "x")


def test_aliases_resolve_to_their_command_and_unknown_names_to_none() -> None:
    registry = default_registry()
    spec = registry.resolve(Command("start", ""))
    assert spec is not None and spec.name == "help"
    assert registry.resolve(Command("foo", "")) is None
    assert registry.parse("/start@bot", "bot") == Command("help", "")
    assert registry.parse("/foo") is None


def test_a_name_registered_twice_or_malformed_is_refused() -> None:
    registry = default_registry()
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(CommandSpec("go", "Go", _noop, aliases=("new",)))
    with pytest.raises(ValueError, match="1-32 of a-z"):
        registry.register(CommandSpec("Go-Now", "Go", _noop))
    assert registry.resolve(Command("go", "")) is None


def test_help_lists_admin_commands_to_admins_only() -> None:
    registry = default_registry()
    registry.register(CommandSpec("purge", "Forget everything", _noop, permission="admin"))
    assert "/purge - Forget everything" in registry.help_text(admin=True)
    assert "/purge" not in registry.help_text(admin=False)
    assert "purge" not in dict(registry.menu())

"""Allowlist entries are typed (id or username, never one for the other); inbound text is
repaired into something every database and platform accepts."""

from __future__ import annotations

import pytest

from gateway.messages.attachments import kinds_text, unsupported_reply
from gateway.messages.inbound import InboundMessage, repair_text
from gateway.users.allowlist import Allowlist, UserEntry


@pytest.mark.parametrize(
    ("entry", "parsed"),
    [
        (42, UserEntry(user_id="42")),
        ("42", UserEntry(user_id="42")),
        ("@42", UserEntry(username="42")),
        ("@Bob", UserEntry(username="bob")),
        ("bob", UserEntry(username="bob")),
        ("  ", None),
        ("@", None),
    ],
)
def test_entries_are_ids_when_numbers_and_usernames_otherwise(entry, parsed):
    assert UserEntry.parse(entry) == parsed


def test_an_allowed_id_never_matches_a_username_and_a_username_never_matches_an_id():
    allowlist = Allowlist([42, "@7"])
    assert allowlist.allows("42", "someone")
    assert not allowlist.allows("1000", "42")  # username "42" is not user 42
    assert allowlist.allows("1000", "7")
    assert not allowlist.allows("7", None)  # user 7 is not username "7"


def test_usernames_match_case_insensitively_with_or_without_the_at_sign():
    allowlist = Allowlist(["@Alice", "bob"])
    assert allowlist.allows("1", "alice")
    assert allowlist.allows("2", "BOB")
    assert not allowlist.allows("3", None)


def test_allow_all_admits_everyone_and_an_empty_list_no_one():
    assert Allowlist([], allow_all=True).allows("5")
    assert not Allowlist([]).allows("5", "anyone")


@pytest.mark.parametrize(
    ("raw", "repaired"),
    [
        ("plain", "plain"),
        ("a\ud800b", "a\ufffdb"),
        ("\udfffend", "\ufffdend"),
        ("nul\x00byte", "nulbyte"),
        ("emoji 😀 stays", "emoji 😀 stays"),
    ],
)
def test_lone_surrogates_become_replacement_characters_and_nul_is_dropped(raw, repaired):
    assert repair_text(raw) == repaired
    repair_text(raw).encode("utf-8")  # storable


def test_a_repaired_message_keeps_everything_but_the_broken_characters():
    message = InboundMessage(
        "telegram", "1", "2", "hi \ud83d", "1:3", "telegram:1", username="x\x00y"
    )
    fixed = message.repaired()
    assert (fixed.text, fixed.username, fixed.platform_message_id) == ("hi \ufffd", "xy", "1:3")
    assert InboundMessage.from_payload(fixed.to_payload()) == fixed


def test_unsupported_content_is_named_in_the_reply():
    assert kinds_text(["photo", "photo", "voice"]) == "photos and voice messages"
    assert "can't read stickers yet" in unsupported_reply(["sticker"])

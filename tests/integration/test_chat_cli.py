"""``hermes chat`` end to end: a scripted conversation against the Anthropic emulator."""

from __future__ import annotations

import re
import socket

from gateway.store.db import open_store
from gateway.store.repository import Repository
from tests.integration.conftest import read_jsonl, run_cli, write_config

TURNS = 200


def _script() -> list[str]:
    lines = []
    for i in range(TURNS):
        if i % 25 == 7:
            lines.append(f'[[tool:calculator {{"expression": "{i} * 3"}}]] turn {i}: calculate it')
        else:
            lines.append(f"turn {i}: tell me something about the number {i} — ünïcödé ✓")
    return lines


def _usage_numbers(text: str) -> dict[str, int]:
    prompt = re.search(r"uncached ([\d,]+), cache read ([\d,]+), cache write ([\d,]+)", text)
    output = re.search(r"Output tokens: ([\d,]+)", text)
    assert prompt and output, text
    values = [int(g.replace(",", "")) for g in (*prompt.groups(), output.group(1))]
    return dict(zip(("input", "cache_read", "cache_write", "output"), values, strict=True))


async def test_scripted_200_turn_chat_stores_everything_and_usage_matches_the_api(
    tmp_path, emulator
):
    config = write_config(tmp_path, emulator.base_url)
    result = await run_cli(
        "chat", "--config", str(config), stdin="\n".join([*_script(), "/usage"]) + "\n"
    )
    assert result.code == 0, result.stderr
    replies = result.replies()
    assert len(replies) == TURNS + 1
    assert any("Tool result:" in r for r in replies), "tool calls were executed and fed back"

    assert emulator.stats.rejected_400 == 0
    assert emulator.stats.requests == emulator.stats.ok
    usage = _usage_numbers(result.stdout.rsplit("Usage of session", 1)[-1])
    assert usage == {
        "input": emulator.stats.input_tokens,
        "cache_read": emulator.stats.cache_read_tokens,
        "cache_write": emulator.stats.cache_write_tokens,
        "output": emulator.stats.output_tokens,
    }
    assert usage["cache_read"] > usage["input"], "prompt caching should serve most of the prompt"

    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    try:
        repo = Repository(store)
        [session] = await repo.list_sessions()
        stored = await repo.all_messages(session.id)
        users = [m for m in stored if m.role == "user"]
        assert [m.content for m in users] == _script()
        assert sum(m.role == "tool" for m in stored) == 8
        assert all(m.token_count > 0 for m in stored)
        totals = await repo.usage_totals(session.id)
        assert totals.calls == emulator.stats.ok
    finally:
        await store.close()

    export = tmp_path / "export.jsonl"
    exported = await run_cli(
        "sessions", "export", str(session.id), "-o", str(export), "--config", str(config)
    )
    assert exported.code == 0, exported.stderr
    rows = [r for r in read_jsonl(export) if r["type"] == "message"]
    assert len(rows) == len(stored)
    assert [r["content"] for r in rows if r["role"] == "user"] == _script()


async def test_bad_config_exits_2_naming_the_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("compression:\n  treshold: 0.5\n")
    result = await run_cli("chat", "--config", str(path))
    assert result.code == 2
    assert (
        result.stderr.strip()
        == "hermes: config error: compression.treshold: unknown key (did you mean 'threshold'?)"
    )


async def test_missing_api_key_names_the_variable(tmp_path, emulator, monkeypatch):
    config = write_config(tmp_path, emulator.base_url, model={"api_key_env": "HERMES_UNSET_KEY"})
    monkeypatch.delenv("HERMES_UNSET_KEY", raising=False)
    result = await run_cli("chat", "--config", str(config), stdin="hello\n")
    assert result.code == 2
    assert "HERMES_UNSET_KEY" in result.stderr
    assert emulator.stats.requests == 0


async def test_model_outage_apologises_and_the_next_message_works(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url)
    emulator.inject_fault("529", count=1)
    result = await run_cli("chat", "--config", str(config), stdin="first\nsecond\n")
    assert result.code == 0, result.stderr
    first, second = result.replies()
    assert first.startswith("hermes> Sorry, I couldn't reach the model")
    assert "second" in second
    assert emulator.stats.rejected_400 == 0


async def test_an_endpoint_that_is_down_is_reported_as_unreachable_not_overloaded(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = write_config(tmp_path, f"http://127.0.0.1:{port}")
    result = await run_cli("chat", "--config", str(config), stdin="anyone there?\n")
    assert result.code == 0, result.stderr
    [reply] = result.replies()
    assert "could not be reached" in reply
    assert "overloaded" not in reply + result.stderr


async def test_new_starts_a_fresh_session_and_keeps_the_old_one(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url)
    script = "first session hello\n/status\n/new\nsecond session hello\n/status\n/compress\n"
    result = await run_cli("chat", "--config", str(config), stdin=script)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "Session #1 (cli:local)" in out and "Session #2 (cli:local)" in out
    assert "Started a new session (#2). The previous one stays stored." in out
    assert "Prompt caching: ENABLED (Claude native, auto TTL: 5m now)" in out
    assert "Nothing to compact" in out or "Compacted:" in out
    listing = await run_cli("sessions", "list", "--config", str(config))
    lines = listing.stdout.splitlines()
    assert len(lines) == 2 and sum(line.startswith("*") for line in lines) == 1
    # The second session does not see the first one's messages.
    last_request = emulator.requests[-1]
    assert "first session" not in str(last_request.body)

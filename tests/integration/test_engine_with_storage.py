"""A third-party engine with tables of its own, using nothing but the ``MessageArchive``
(tests/fixtures/pins_engine), runs through ``hermes chat``: the host finds it in
``$HERMES_HOME/plugins/context_engine/pins/``, runs its migration chain, gives it the archive;
its pins are written through the host's writer, survive a restart and bring a compacted-away
message back into the context. On SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sqlalchemy import text

from gateway.store.db import open_store
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.anthropic_replies import Reply
from tests.integration.conftest import run_cli, write_config

PINS_ENGINE = Path(__file__).resolve().parents[1] / "fixtures" / "pins_engine"
FACT = "The warehouse code word is plumquist."
PIN_REQUEST = "Please pin the code word."
SHOW_REQUEST = "Show me what is pinned."
TOOL_CALLS = {
    PIN_REQUEST: ("pin_message", {"query": "warehouse code word", "note": "code word"}),
    SHOW_REQUEST: ("pinned", {}),
}


def _text(content: str | list[dict[str, Any]]) -> str:
    """The text of a wire message's content (its text blocks, or tool results' contents)."""
    if isinstance(content, str):
        return content
    return " ".join(_text(b.get("content", "")) or b.get("text", "") for b in content)


def _last_user_text(body: dict[str, Any]) -> tuple[str, bool]:
    """The text of the request's last user message, and whether it carries tool results."""
    content = body["messages"][-1]["content"]
    results = not isinstance(content, str) and any(b["type"] == "tool_result" for b in content)
    return _text(content), results


def scripted(body: dict[str, Any]) -> Reply | str:
    """The model calls the engine's tool for the two requests that ask for it."""
    said, answered_tool = _last_user_text(body)
    for request, (tool, args) in TOOL_CALLS.items():
        if request in said and not answered_tool:
            block = {"type": "tool_use", "id": f"toolu_{tool}", "name": tool, "input": args}
            return Reply([block], stop_reason="tool_use")
    return f"Noted: {said[:24]}"


async def test_a_plugin_engine_keeps_its_own_records_through_the_archive(
    tmp_path: Path, offline_env: Path, any_db_url: str
) -> None:
    shutil.copytree(
        PINS_ENGINE,
        offline_env / "plugins" / "context_engine" / "pins",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    emulator = AnthropicEmulator(context_length=200_000, reply_tokens=20, reply_fn=scripted)
    await emulator.start()
    try:
        config = write_config(
            tmp_path,
            emulator.base_url,
            context={"engine": "pins", "pins": {"keep": 2}},
            database={"url": any_db_url},
        )
        first = await run_cli(
            "chat",
            "--config",
            str(config),
            stdin="\n".join([FACT, PIN_REQUEST, "filler one", "filler two", "/compress"]) + "\n",
        )
        assert first.code == 0, first.stderr
        before_restart = len(emulator.requests)

        second = await run_cli(
            "chat", "--config", str(config), stdin="\n".join(["What now?", SHOW_REQUEST]) + "\n"
        )
        assert second.code == 0, second.stderr
    finally:
        await emulator.stop()

    results = [_last_user_text(r.body) for r in emulator.requests]
    pinned = [said for said, answered_tool in results if answered_tool]
    after = emulator.requests[before_restart]  # the first request after the restart
    context = [_text(m["content"]) for m in after.body["messages"]]
    # The fact left the context at /compress; the pin brought it back, read from the archive.
    assert FACT not in context
    assert any(
        c.startswith("Pinned earlier in this chat:\n- (code word) user: " + FACT) for c in context
    )
    assert pinned[0].startswith("pinned message ") and pinned[0].endswith(": code word")
    # After the restart, ``pinned`` reads the pin, and the range from its message on.
    said, answered_tool = _last_user_text(emulator.requests[-1].body)
    assert answered_tool
    assert said == f"code word:\nuser: {FACT}\nassistant: Noted: {FACT[:24]}"

    store = await open_store(any_db_url)
    try:
        async with store.engine.connect() as connection:
            pins = (await connection.execute(text("SELECT note FROM pins"))).scalars().all()
            versions = (
                (await connection.execute(text("SELECT version_num FROM alembic_version_pins")))
                .scalars()
                .all()
            )
    finally:
        await store.close()
    assert pins == ["code word"]
    assert versions == ["pins_0001"]

"""``hermes config check`` shows every MCP server's settings and the web search settings with
each secret masked, with real secret values in the environment: the secrets appear in neither
the output nor the log (of ``hermes chat`` connecting with them too)."""

from __future__ import annotations

import sys

import yaml

from tests.integration.conftest import run_cli, write_config

SEARCH_TOKEN = "search-token-SECRET-0123456789"
NOTES_TOKEN = "notes-token-SECRET-0123456789"
BRAVE_KEY = "brave-key-SECRET-0123456789"
LITERALS = {
    "header": "static-header-SECRET-777",
    "url password": "url-password-SECRET-555",
    "url query": "url-query-SECRET-444",
    "flag value": "flag-value-SECRET-333",
    "flag=value": "flag-equals-SECRET-222",
    "url in an argument": "arg-url-password-SECRET-111",
}
"""Secrets written into the file itself (against the advice): masked by their place."""


def secret_config(tmp_path, base_url: str):
    search = {
        "url": (
            f"http://bot:{LITERALS['url password']}@127.0.0.1:9/mcp"
            f"?api_key={LITERALS['url query']}&region=eu"
        ),
        "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}", "X-Static": LITERALS["header"]},
        "timeout_seconds": 5,
        "tools": ["search"],
        "users": "admins",
    }
    notes = {
        "command": sys.executable,
        "args": [
            "-c",
            "pass",
            "--api-key",
            LITERALS["flag value"],
            f"--token={LITERALS['flag=value']}",
            f"postgresql://app:{LITERALS['url in an argument']}@db.internal/app",
            NOTES_TOKEN,  # a configured secret's value where nothing marks it as one
        ],
        "env": ["NOTES_TOKEN"],
        "ask": ["write"],
    }
    return write_config(
        tmp_path,
        base_url,
        mcp={"servers": {"search": search, "notes": notes}},
        web={"search": {"provider": "brave", "api_key_env": "BRAVE_API_KEY"}},
        agent={"tools": ["calculator", "web_search"]},
        logging={"level": "DEBUG", "file": str(tmp_path / "hermes.log")},
    )


async def test_config_check_masks_every_mcp_and_web_secret(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", SEARCH_TOKEN)
    monkeypatch.setenv("NOTES_TOKEN", NOTES_TOKEN)
    monkeypatch.setenv("BRAVE_API_KEY", BRAVE_KEY)
    config = secret_config(tmp_path, emulator.base_url)

    checked = await run_cli("config", "check", "--config", str(config))
    chat = await run_cli("chat", "--config", str(config), stdin="hello\n")

    assert checked.code == 0, checked.stderr
    assert chat.code == 0, chat.stderr
    log = tmp_path / "hermes.log"
    assert log.exists(), "the chat wrote its log"
    everything = checked.stdout + checked.stderr + chat.stdout + chat.stderr + log.read_text()
    for secret in [SEARCH_TOKEN, NOTES_TOKEN, BRAVE_KEY, *LITERALS.values()]:
        assert secret not in everything

    shown = yaml.safe_load(checked.stdout)
    search, notes = shown["mcp"]["servers"]["search"], shown["mcp"]["servers"]["notes"]
    assert search["headers"] == {"Authorization": "Bearer ${SEARCH_TOKEN}", "X-Static": "***"}
    assert search["url"] == "http://bot:***@127.0.0.1:9/mcp?api_key=***&region=eu"
    assert (search["timeout_seconds"], search["tools"], search["users"]) == (
        5,
        ["search"],
        "admins",
    )
    assert notes["command"] == sys.executable
    assert notes["args"] == [
        "-c",
        "pass",
        "--api-key",
        "***",
        "--token=***",
        "postgresql://app:***@db.internal/app",
        "***",
    ]
    assert (notes["env"], notes["ask"]) == (["NOTES_TOKEN"], ["write"])
    assert shown["web"]["search"]["api_key_env"] == "BRAVE_API_KEY"
    assert shown["model"]["api_key_env"] == "HERMES_TEST_ANTHROPIC_KEY"

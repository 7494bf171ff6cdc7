"""``mcp.*`` configuration: stdio and HTTP servers, and errors that name the key."""

from __future__ import annotations

import pytest

from gateway.config.schema import ConfigError, parse_config


def test_a_stdio_and_an_http_server_with_their_defaults():
    config = parse_config(
        {
            "mcp": {
                "servers": {
                    "files": {"command": "npx", "args": ["-y", "fs"], "env": ["NOTES_TOKEN"]},
                    "search": {
                        "url": "http://127.0.0.1:8931/mcp",
                        "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
                        "ask": ["*"],
                        "users": "admins",
                    },
                }
            }
        }
    )
    files, search = config.mcp.servers["files"], config.mcp.servers["search"]
    assert (files.transport, files.timeout_seconds, files.tools, files.ask) == (
        "stdio",
        60.0,
        None,
        [],
    )
    assert (search.transport, search.users, search.ask) == ("http", "admins", ["*"])
    assert config.mcp.approval_timeout_seconds == 600.0


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"Files": {"command": "x"}}, "mcp.servers: server name 'Files' must match [a-z0-9_]+"),
        (
            {"my__files": {"command": "x"}},
            "mcp.servers: server name 'my__files' must not contain '__'",
        ),
        ({"files": {}}, "mcp.servers.files: give either command"),
        ({"files": {"command": "x", "url": "http://h/mcp"}}, "mcp.servers.files: give either"),
        ({"files": {"command": "x", "comand": "y"}}, "mcp.servers.files.comand: unknown key"),
        (
            {"files": {"command": "x", "timeout_seconds": 0}},
            "mcp.servers.files.timeout_seconds: must be greater than 0",
        ),
        ({"files": {"command": "x", "users": "everyone"}}, "mcp.servers.files.users: must be"),
        (
            {"files": {"command": "x", "env": ["NOT-A-NAME"]}},
            "mcp.servers.files.env: 'NOT-A-NAME' is not an environment variable name",
        ),
        (
            {"web": {"url": "http://h/mcp", "headers": {"A": "${bad name}"}}},
            "mcp.servers.web.headers: A: ${bad name} is not an environment variable name",
        ),
        (
            {"web": {"url": "http://h/mcp", "env": ["TOKEN"]}},
            "mcp.servers.web: env: only for a stdio server",
        ),
        ({"web": {"url": "ftp://h/mcp"}}, "mcp.servers.web.url:"),
    ],
)
def test_bad_server_settings_are_errors_naming_the_key(servers, message):
    with pytest.raises(ConfigError) as info:
        parse_config({"mcp": {"servers": servers}})
    assert str(info.value).startswith(message), str(info.value)


def test_an_unknown_mcp_key_is_an_error():
    with pytest.raises(ConfigError, match=r"^mcp.server: unknown key \(did you mean 'servers'\?\)"):
        parse_config({"mcp": {"server": {}}})

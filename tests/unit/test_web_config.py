"""``web.*`` configuration: defaults, the search provider, errors that name the key, and the
Brave key taken from the environment and masked in the log."""

from __future__ import annotations

import pytest

from agent.tools import build_registry
from agent.tools.web.settings import BRAVE_SEARCH_URL
from gateway.config.schema import ConfigError, parse_config
from gateway.config.secrets import configured_secret_env_names


def test_by_default_fetch_stays_on_public_addresses_and_search_is_off():
    tools = parse_config({}).web.tool_settings()
    assert (tools.allow_private_addresses, tools.fetch_max_bytes) == (False, 2_000_000)
    assert (tools.fetch_timeout_seconds, tools.max_redirects, tools.search) == (20.0, 5, None)


def test_a_searxng_instance_is_reached_at_its_base_url():
    web = {"search": {"provider": "searxng", "base_url": "http://127.0.0.1:8888"}}
    search = parse_config({"web": web}).web.tool_settings().search
    assert search is not None
    assert (search.provider, search.base_url, search.api_key) == (
        "searxng",
        "http://127.0.0.1:8888",
        None,
    )


def test_the_brave_key_comes_from_the_named_variable_and_is_masked(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("BRAVE_API_KEY", "brave-secret-1")
    config = parse_config(
        {"web": {"search": {"provider": "brave", "api_key_env": "BRAVE_API_KEY"}}}
    )
    search = config.web.tool_settings().search
    assert search is not None
    assert (search.base_url, search.api_key) == (BRAVE_SEARCH_URL, "brave-secret-1")
    assert "BRAVE_API_KEY" in configured_secret_env_names(config)
    assert "brave-secret-1" not in repr(config.web.tool_settings())


def test_a_brave_key_not_set_leaves_search_answering_with_an_error(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    config = parse_config(
        {"web": {"search": {"provider": "brave", "api_key_env": "BRAVE_API_KEY"}}}
    )
    search = config.web.tool_settings().search
    assert search is not None and search.api_key is None


def test_web_tools_are_offered_when_listed_in_agent_tools():
    config = parse_config({"agent": {"tools": ["web_fetch", "web_search"]}})
    registry = build_registry(config.agent.tools, web=config.web.tool_settings())
    assert registry.names() == ["web_fetch", "web_search"]


@pytest.mark.parametrize(
    ("web", "message"),
    [
        ({"allow_private_addresses": "sometimes"}, "web.allow_private_addresses"),
        ({"fetch_max_bytes": 10}, "web.fetch_max_bytes"),
        ({"fetch_timeout_seconds": 0}, "web.fetch_timeout_seconds"),
        ({"search": {"provider": "google"}}, "web.search.provider"),
        ({"search": {"provider": "searxng"}}, "base_url: required for provider searxng"),
        ({"search": {"provider": "brave"}}, "api_key_env: required for provider brave"),
        ({"search": {"base_url": "ftp://x"}}, "web.search.base_url"),
        ({"search": {"api_key_env": "not a name"}}, "web.search.api_key_env"),
        ({"serach": {}}, "web.serach"),
    ],
)
def test_a_bad_web_setting_is_an_error_naming_the_key(web: dict[str, object], message: str):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        parse_config({"web": web})

"""Configuration: validation errors name the key, defaults match config.yaml, secrets masked."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.cli.main import main
from gateway.config.masking import is_secret_key, literal_secrets, masked_config
from gateway.config.schema import (
    Config,
    ConfigError,
    MissingSecretError,
    load_config,
    parse_config,
    require_secret,
)

ROOT = Path(__file__).resolve().parents[2]


def test_documented_config_yaml_equals_the_built_in_defaults():
    documented = parse_config(yaml.safe_load((ROOT / "config.yaml").read_text()))
    assert documented.model_dump() == Config().model_dump()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"compression": {"threshold": 1.5}},
            "compression.threshold: must be between 0 and 1 (got 1.5)",
        ),
        (
            {"compression": {"treshold": 0.4}},
            "compression.treshold: unknown key (did you mean 'threshold'?)",
        ),
        ({"modle": {}}, "modle: unknown key (did you mean 'model'?)"),
        (
            {"prompt_caching": {"cache_ttl": "10m"}},
            "prompt_caching.cache_ttl: must be 'auto', '5m' or '1h'",
        ),
        ({"model": {"max_tokens": 0}}, "model.max_tokens: must be greater than 0 (got 0)"),
        ({"context": {"lcm": 3}}, "context.lcm: must be a mapping of engine settings"),
        ({"jobs": {"grace_minutes": 1.5}}, "jobs.grace_minutes: "),
        ({"jobs": {"max_per_user": 0}}, "jobs.max_per_user: "),
        ({"jobs": {"enable": False}}, "jobs.enable: unknown key (did you mean 'enabled'?)"),
    ],
)
def test_bad_values_are_errors_naming_the_key(data, message):
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert str(info.value).startswith(message)


def test_engine_sections_are_free_form_mappings():
    config = parse_config({"context": {"engine": "lcm", "lcm": {"leaf_chunk_tokens": 2000}}})
    assert config.context.engine_section("lcm") == {"leaf_chunk_tokens": 2000}
    assert config.context.engine_section("other") == {}


def test_cli_exits_2_with_one_line_naming_the_key(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text("compression:\n  threshold: 1.5\n")
    assert main(["config", "check", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hermes: config error: compression.threshold: must be between 0 and 1 (got 1.5)"]


def test_invalid_yaml_names_the_file_and_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("model:\n  name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"config.yaml: line \d+ is not valid YAML"):
        load_config(path)


def test_missing_secret_names_the_environment_variable(monkeypatch):
    monkeypatch.delenv("HERMES_TEST_KEY", raising=False)
    with pytest.raises(MissingSecretError, match="export HERMES_TEST_KEY="):
        require_secret("HERMES_TEST_KEY", "the API key")


def test_dotenv_file_supplies_secrets_without_overriding_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_DOTENV_KEY", raising=False)
    (tmp_path / ".env").write_text("HERMES_DOTENV_KEY=from-dotenv\n")
    load_config(None)
    assert require_secret("HERMES_DOTENV_KEY", "key") == "from-dotenv"
    monkeypatch.delenv("HERMES_DOTENV_KEY")


def test_config_check_masks_database_passwords():
    config = parse_config({"database": {"url": "postgresql+asyncpg://bot:s3cret@db/hermes"}})
    shown = masked_config(config)
    assert shown["database"]["url"] == "postgresql+asyncpg://bot:***@db/hermes"
    assert shown["model"]["api_key_env"] == "ANTHROPIC_API_KEY"


def test_config_check_prints_the_effective_configuration(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text("compression:\n  threshold: 0.6\n")
    assert main(["config", "check", "--config", str(path)]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["compression"]["threshold"] == 0.6
    assert printed["prompt_caching"]["cache_ttl"] == "auto"


def test_config_check_shows_header_templates_and_masks_literal_secrets():
    server = {
        "url": "https://bot:pw-123@mcp.example:8443/mcp?token=t-456&region=eu",
        "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}", "X-Api": "literal-789"},
    }
    child = {"command": "notes", "args": ["--auth", "a-1", "--api-key=k-2", "-v"], "env": ["X"]}
    config = parse_config({"mcp": {"servers": {"search": server, "notes": child}}})
    shown = masked_config(config)["mcp"]["servers"]
    assert shown["search"]["url"] == "https://bot:***@mcp.example:8443/mcp?token=***&region=eu"
    assert shown["search"]["headers"] == {"Authorization": "Bearer ${SEARCH_TOKEN}", "X-Api": "***"}
    assert shown["notes"]["args"] == ["--auth", "***", "--api-key=***", "-v"]
    assert shown["notes"]["env"] == ["X"]
    assert literal_secrets(config) == {"pw-123", "t-456", "literal-789", "a-1", "k-2"}


def test_counts_named_after_tokens_are_not_secrets():
    config = parse_config({"agent": {"max_tool_result_tokens": "auto"}})
    assert masked_config(config)["agent"]["max_tool_result_tokens"] == "auto"
    assert "auto" not in literal_secrets(config)
    assert is_secret_key("api_key") and is_secret_key("bot_token") and is_secret_key("password")


def test_failover_is_off_by_default_with_a_ten_second_lease() -> None:
    failover = parse_config({}).gateway.failover
    assert (failover.enabled, failover.lease_seconds) == (False, 10.0)


def test_failover_on_sqlite_is_an_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^gateway\.failover\.enabled: needs database\.url"):
        parse_config({"gateway": {"failover": {"enabled": True}}})
    with pytest.raises(ConfigError, match=r"^gateway\.failover\.enabled"):
        parse_config(
            {
                "gateway": {"failover": {"enabled": True}},
                "database": {"url": "sqlite:///hermes.db"},
            }
        )


def test_failover_on_postgresql_is_accepted() -> None:
    config = parse_config(
        {
            "gateway": {"failover": {"enabled": True, "lease_seconds": 4}},
            "database": {"url": "postgresql://hermes@db/hermes"},
        }
    )
    assert config.gateway.failover.lease_seconds == 4.0

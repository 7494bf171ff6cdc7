"""``hermes chat`` refuses to start, exit status 2, for a model it cannot price while a
spending limit is set, naming the key that prices it."""

from __future__ import annotations

from pathlib import Path

from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.conftest import run_cli, write_config

LOCAL_MODEL = "my-local-llama"
"""Unknown to genai-prices and to the model table."""


async def test_hermes_chat_with_an_unpriced_model_and_a_limit_exits_2_naming_model_prices(
    tmp_path: Path, emulator: AnthropicEmulator
) -> None:
    config = write_config(
        tmp_path,
        emulator.base_url,
        model={"name": LOCAL_MODEL},
        limits={"monthly_usd_total": 10},
    )
    result = await run_cli("chat", "--config", str(config), stdin="hello\n")
    assert result.code == 2
    assert f"model.name: no known price for model '{LOCAL_MODEL}'; set model.prices" in (
        result.stderr
    )
    assert emulator.stats.requests == 0

"""Fixtures for end-to-end tests: the Anthropic emulator and a config file pointing at it."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.policy_support import AppFactory, app_factory

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "HERMES_TEST_ANTHROPIC_KEY"


@pytest.fixture(autouse=True)
def _clean_env(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")


@pytest.fixture
async def emulator() -> AsyncIterator[AnthropicEmulator]:
    emu = AnthropicEmulator(context_length=200_000, reply_tokens=40)
    await emu.start()
    try:
        yield emu
    finally:
        await emu.stop()


def write_config(tmp_path: Path, base_url: str, **sections: dict) -> Path:
    """A config file for the emulator; ``sections`` are merged over the defaults used here."""
    data: dict = {
        "model": {
            "name": "claude-sonnet-4-5",
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "max_retries": 0,
        },
        "database": {"url": f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}"},
        "logging": {"level": "WARNING"},
    }
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def replies(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith("hermes> ")]


async def run_cli(*args: str, stdin: str = "", limit: float = 240.0) -> CliResult:
    """Run ``hermes`` as a separate process (the emulator keeps serving in this loop)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway.cli.main",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(ROOT),
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), limit)
    return CliResult(proc.returncode or 0, out.decode(), err.decode())


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
async def anthropic() -> AsyncIterator[AnthropicEmulator]:
    """The emulator for the context-policy tests (longer replies, so contexts grow)."""
    emu = AnthropicEmulator(reply_tokens=300)
    await emu.start()
    try:
        yield emu
    finally:
        await emu.stop()


@pytest.fixture
def policy_app(tmp_path: Path, anthropic: AnthropicEmulator) -> AppFactory:
    """``async with policy_app(name, **compression) as app``: an app on its own SQLite file."""
    return app_factory(anthropic, tmp_path)

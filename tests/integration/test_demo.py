"""The README's main command: ``hermes demo`` runs offline and prints its report."""

from __future__ import annotations

import re

from tests.integration.conftest import run_cli


async def test_demo_runs_the_gateway_offline_and_reports_the_night(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    result = await run_cli("demo", "--turns", "30", limit=300)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "telegram: connected as @" in out
    assert "Prompt caching: ENABLED" in out
    handled = re.search(r"Messages handled\s+(\d+) from 3 chats", out)
    replies = re.search(r"Replies sent\s+(\d+)", out)
    assert handled and replies, out
    assert int(replies.group(1)) >= int(handled.group(1)) > 30
    assert re.search(r"the emulator rejected 0\)", out)
    assert re.search(r"Compactions\s+.*manual 3", out), out
    assert re.search(r"Cache hit rate\s+\d+\.\d%", out)
    assert re.search(r"Gateway overhead\s+p50 [\d.]+ ms, p95 [\d.]+ ms", out)

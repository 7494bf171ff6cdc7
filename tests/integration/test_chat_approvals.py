"""``hermes chat`` asks ``y/n/a`` before a tool in its server's ``ask`` list runs (a scripted
chat reads the answer as its next line), with the real stdio notes server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agent.tools.approvals import DENIED_RESULT
from tests.integration.conftest import ROOT, run_cli, write_config

NOTES_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "notes_server.py"
WRITE = '[[tool:notes__write {"name": "plan", "text": "sell"}]] save my plan'


async def test_y_allows_n_denies_and_a_is_remembered_across_runs(tmp_path, emulator):
    server = {"command": sys.executable, "args": [str(NOTES_SERVER)], "ask": ["write"]}
    config = write_config(tmp_path, emulator.base_url, mcp={"servers": {"notes": server}})
    script = [WRITE, "y", WRITE, "n", WRITE, "a", WRITE]
    first = await run_cli("chat", "--config", str(config), stdin="\n".join(script) + "\n")
    assert first.code == 0, first.stderr
    assert first.stdout.count("allow? [y]es once, [a]lways here, [n]o") == 3
    assert 'notes__write {"name": "plan", "text": "sell"}' in first.stdout
    replies = first.replies()
    assert len(replies) == 4
    assert "saved plan" in replies[0]
    assert DENIED_RESULT in replies[1] and "saved" not in replies[1]
    assert "saved plan" in replies[2]
    assert "saved plan" in replies[3], "always: not asked again"

    second = await run_cli("chat", "--config", str(config), stdin=WRITE + "\n")
    assert second.code == 0, second.stderr
    assert "allow?" not in second.stdout, "always in this chat survives a restart"
    assert "saved plan" in second.replies()[0]


async def test_the_line_typed_after_an_approval_timed_out_is_read_as_a_message(tmp_path, emulator):
    server = {"command": sys.executable, "args": [str(NOTES_SERVER)], "ask": ["write"]}
    mcp = {"servers": {"notes": server}, "approval_timeout_seconds": 0.5}
    config = write_config(tmp_path, emulator.base_url, mcp=mcp)
    proc = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "gateway.cli.main", "chat", "--config", str(config)],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(ROOT),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((WRITE + "\n").encode())
    await proc.stdin.drain()
    seen = []
    async with asyncio.timeout(60):  # a guard against hangs; the prompt waits 0.5 s
        while not any("no answer in time" in line for line in seen):
            seen.append((await proc.stdout.readline()).decode())
        proc.stdin.write(b"what is on my list after all?\n")
        proc.stdin.close()
        out, _err = await proc.communicate()
    lines = "".join(seen).splitlines() + out.decode().splitlines()
    replies = [line for line in lines if line.startswith("hermes> ")]
    assert any("Noted: what is on my list after all?" in reply for reply in replies), lines
    assert proc.returncode == 0

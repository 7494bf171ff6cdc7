"""Start-up of the CLI commands people run by hand or from scripts, in fresh processes.

Times, wall clock over ``--runs`` runs each (min and median, in seconds), against the targets
of issue 13: ``hermes --help`` (< 0.3 s), ``hermes sessions list`` on an up-to-date SQLite
database of ``--sessions`` sessions (< 0.5 s), ``hermes chat`` starting and ending on an
empty stdin (< 1.5 s), and ``hermes --version``.

    python -m bench.startup [--runs 10] [--sessions 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gateway.store.db import default_database_url, open_store
from gateway.store.repository import Repository

COMMANDS: dict[str, tuple[list[str], float]] = {
    "--help": (["--help"], 0.3),
    "--version": (["--version"], 0.3),
    "sessions list": (["sessions", "list"], 0.5),
    "chat </dev/null": (["chat"], 1.5),
}
"""Label -> (arguments, target in seconds)."""


async def _fill(home: Path, sessions: int) -> None:
    store = await open_store(default_database_url(home))
    try:
        repo = Repository(store)
        for n in range(sessions):
            session = await repo.get_or_create_session(
                f"telegram:{n}", platform="telegram", chat_id=str(n)
            )
            await repo.append_messages(session.id, [{"role": "user", "content": f"hello {n}"}], [3])
    finally:
        await store.close()


def _time(arguments: list[str], env: dict[str, str], runs: int) -> list[float]:
    hermes = Path(sys.executable).with_name("hermes")
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [str(hermes), *arguments],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            check=True,
        )
        walls.append(time.perf_counter() - started)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        asyncio.run(_fill(home, args.sessions))
        env = {**os.environ, "HERMES_HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-bench"}
        print(f"start-up of the CLI ({os.cpu_count()} CPUs, {args.runs} runs each)")
        for label, (arguments, target) in COMMANDS.items():
            walls = _time(arguments, env, args.runs)
            fastest, median = min(walls), statistics.median(walls)
            verdict = "OK" if median < target else "over"
            print(
                f"  hermes {label:<16} min {fastest:.3f} s  p50 {median:.3f} s"
                f"  (target < {target} s: {verdict})"
            )


if __name__ == "__main__":
    main()

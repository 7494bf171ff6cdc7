"""Benchmark: how fast the store appends a batch of messages (rows per second).

Runs ``Repository.append_messages`` (one transaction, one Core executemany) on a fresh
database and prints rows/s. Not a test: numbers depend on the machine.

    .venv/bin/python bench/store_insert.py                    # temporary SQLite file
    .venv/bin/python bench/store_insert.py --rows 50000
    .venv/bin/python bench/store_insert.py --url postgresql+asyncpg://user@127.0.0.1:5432/bench
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from agent.types import Message
from gateway.store.db import default_database_url, open_store
from gateway.store.repository import Repository

DEFAULT_ROWS = 10_000
MESSAGE_TEXT = "A typical chat line of a couple of hundred characters, with unicode: ü 東京 🌍. "


def messages(count: int) -> list[Message]:
    """Alternating user and assistant messages of realistic size."""
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": f"{i}: {MESSAGE_TEXT * 2}"} for i in range(count)]


async def bench(url: str, rows: int) -> float:
    """Append ``rows`` messages in one call and return the rate in rows per second."""
    store = await open_store(url)
    try:
        repo = Repository(store)
        session = await repo.start_new_session("bench:insert", platform="bench", chat_id="bench")
        batch = messages(rows)
        started = time.perf_counter()
        ids = await repo.append_messages(session.id, batch, [40] * rows)
        elapsed = time.perf_counter() - started
        assert len(ids) == rows
        return rows / elapsed
    finally:
        await store.close()


def main() -> None:
    """Parse arguments, run the benchmark, print the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as home:
        url = args.url or default_database_url(Path(home))
        rate = asyncio.run(bench(url, args.rows))
    print(f"append_messages: {args.rows:,} rows at {rate:,.0f} rows/s ({args.rows / rate:.3f} s)")


if __name__ == "__main__":
    main()

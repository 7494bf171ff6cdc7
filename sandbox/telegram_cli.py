"""Running the Telegram Bot API emulator standalone: ``python -m sandbox.telegram_cli``."""

from __future__ import annotations

import argparse
import asyncio

from sandbox.telegram_api import TelegramEmulator

DEFAULT_PORT = 8081
"""The port a local Bot API server conventionally listens on."""


async def _serve_forever(host: str, port: int) -> None:
    emulator = TelegramEmulator()
    await emulator.start(host, port)
    print(
        f"Telegram Bot API emulator at {emulator.base_url} "
        f"(token {emulator.token}; Ctrl-C to stop)",
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await emulator.stop()


def main(argv: list[str] | None = None) -> None:
    """Run the emulator standalone until interrupted."""
    parser = argparse.ArgumentParser(description="Local emulator of the Telegram Bot API")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve_forever(args.host, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

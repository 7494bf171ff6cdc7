"""Running the Anthropic emulator standalone: ``python -m sandbox.anthropic_api --port 9100``."""

from __future__ import annotations

import argparse
import asyncio

from sandbox.anthropic_api import DEFAULT_CONTEXT_LENGTH, DEFAULT_PORT, AnthropicEmulator


async def _serve_forever(host: str, port: int, context_length: int, instant: bool) -> None:
    emulator = AnthropicEmulator(context_length=context_length, instant=instant)
    base_url = await emulator.start(host, port)
    print(f"Anthropic emulator listening on {base_url} (Ctrl-C to stop)", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await emulator.stop()


def main(argv: list[str] | None = None) -> None:
    """Run the emulator standalone until interrupted."""
    parser = argparse.ArgumentParser(description="Local emulator of the Anthropic Messages API")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--context-length", type=int, default=DEFAULT_CONTEXT_LENGTH)
    parser.add_argument(
        "--latency", action="store_true", help="imitate a real model's response latency"
    )
    args = parser.parse_args(argv)
    try:
        asyncio.run(
            _serve_forever(args.host, args.port, args.context_length, instant=not args.latency)
        )
    except KeyboardInterrupt:
        pass

"""Per-turn context overhead of the pipeline at 1,000 and 10,000 messages.

Measures what runs on every turn besides the model call: the hygiene check, the engine's
``should_compress``, request building with cache marking, and the provider's wire conversion,
over a history loaded as from the store (token counts already known). Prints p50/p95 in ms.

    python -m bench.pipeline [--sizes 1000 10000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from agent.context_compressor import ContextCompressor
from agent.loop import AgentLoop, LoopSettings
from agent.prompt_caching import caching_policy
from agent.providers.anthropic_convert import to_anthropic_request
from agent.providers.base import Provider, ProviderName
from agent.tokens import message_tokens
from agent.tools import build_registry
from agent.types import Message, ModelResponse
from gateway.hygiene import needs_hygiene

CONTEXT_LENGTH = 10_000_000  # large enough that nothing compacts: we time the checks alone


def _history(size: int) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": "You are Hermes."}]
    for i in range(size - 1):
        if i % 10 == 5:
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "calculator", "arguments": "{}"},
            }
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"})
        else:
            role = "user" if i % 2 == 0 else "assistant"
            messages.append({"role": role, "content": f"message {i} " + "words " * 30})
    for i, message in enumerate(messages):
        message["_id"] = i + 1
        message_tokens(message)  # counted once, as the store does
    return messages[:size]


class _NoProvider(Provider):
    """Stands in for the model: this benchmark measures everything around the call."""

    name: ProviderName = "anthropic"
    model = "claude-sonnet-4-5"
    native_anthropic = True

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        model: str | None = None,
    ) -> ModelResponse:
        raise NotImplementedError("the pipeline benchmark never calls the model")

    async def aclose(self) -> None:
        return None


async def _noop(*_args: object, **_kwargs: object) -> str:
    return ""


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _time(rounds: int, step: Callable[[], object]) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        step()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def bench_size(size: int, rounds: int) -> dict[str, tuple[float, float]]:
    context = _history(size)
    engine = ContextCompressor(context_length=CONTEXT_LENGTH, call_llm=_noop)
    engine.last_prompt_tokens = sum(message_tokens(m) for m in context)
    policy = caching_policy("anthropic", "claude-sonnet-4-5", None, "5m")
    loop = AgentLoop(
        _NoProvider(),
        engine,
        build_registry(["calculator"]),
        None,  # type: ignore[arg-type]
        LoopSettings(cache_policy=policy),
    )

    def checks_and_build() -> object:
        needs_hygiene(
            context,
            last_prompt_tokens=engine.last_prompt_tokens,
            context_length=CONTEXT_LENGTH,
            compression_enabled=True,
        )
        engine.should_compress(loop.current_prompt_tokens())
        return loop.build_request(context)

    def with_wire() -> object:
        return to_anthropic_request(checks_and_build(), loop.tools.schemas())  # type: ignore[arg-type]

    return {
        "checks + request + cache marks": _percentiles(_time(rounds, checks_and_build)),
        "... + Anthropic wire conversion": _percentiles(_time(rounds, with_wire)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    asyncio.set_event_loop(asyncio.new_event_loop())
    for size in args.sizes:
        for name, (p50, p95) in bench_size(size, args.rounds).items():
            print(f"{size:>6} messages  {name:<34} p50 {p50:7.3f} ms   p95 {p95:7.3f} ms")


if __name__ == "__main__":
    main()

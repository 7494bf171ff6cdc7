"""Per-turn request path of the pipeline at 1,000, 10,000 and 100,000 messages.

Measures what runs on every turn besides the model call: the hygiene check, the engine's
``should_compress``, cache marking, and the Anthropic request body the SDK sends (conversion
and JSON encoding), over a history loaded as from the store (token counts already known), one
new message per round. Prints p50/p95 in ms of the session-kept body, and of a full
re-conversion of the same history in the same run, and their ratio.

    python -m bench.pipeline [--sizes 1000 10000 100000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from agent.compressor.context_compressor import ContextCompressor
from agent.loop import AgentLoop, LoopSettings
from agent.policy.hygiene import needs_hygiene
from agent.prompt_caching import MarkedHistory, caching_policy
from agent.providers.anthropic.wire import AnthropicWireHistory, full_body
from agent.providers.base import Provider, ProviderName
from agent.providers.wire_body import WireBody
from agent.session_context import SessionContext
from agent.tokens import cache_message_tokens
from agent.tools import build_registry
from agent.types import Message, ModelResponse

CONTEXT_LENGTH = 10_000_000  # large enough that nothing compacts: we time the checks alone
MODEL = "claude-sonnet-4-5"
MAX_TOKENS = 4096


def _history(size: int) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "You are Hermes."}]
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
        cache_message_tokens(message)  # counted once, as the store does
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


def _time(rounds: int, step: Callable[[], object], before: Callable[[], object]) -> list[float]:
    """Milliseconds of ``step`` per round; ``before`` (a new message arriving) is not timed."""
    samples = []
    for _ in range(rounds):
        before()
        started = time.perf_counter()
        step()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _full_rounds(size: int, rounds: int) -> int:
    """Rounds for the full re-conversion: it is slow, so fewer of them at large sizes."""
    return max(5, min(rounds, 2_000_000 // size))


def bench_size(size: int, rounds: int) -> dict[str, tuple[float, float]]:
    """p50/p95 (ms) of each measured path at ``size`` messages, plus the full/kept ratio."""
    context = _history(size)
    engine = ContextCompressor(context_length=CONTEXT_LENGTH, call_llm=_noop)
    engine.restore_prompt_size(sum(cache_message_tokens(m) for m in context))
    policy = caching_policy("anthropic", "claude-sonnet-4-5", None, "5m")
    session = SessionContext(
        context,
        engine,
        None,  # type: ignore[arg-type]  # nothing is recorded here
        _NoProvider().open_session(),
    )
    loop = AgentLoop(session, build_registry(["calculator"]), LoopSettings(cache_policy=policy))
    schemas = loop.tools.schemas()
    wire = AnthropicWireHistory()
    arrived = 0

    def new_message() -> None:
        nonlocal arrived
        arrived += 1
        role = "user" if context[-1]["role"] != "user" else "assistant"
        message: Message = {"role": role, "content": f"new message {arrived} " + "words " * 30}
        cache_message_tokens(message)
        context.append(message)

    def checks() -> None:
        needs_hygiene(
            context,
            last_prompt_tokens=engine.last_prompt_tokens,
            context_length=CONTEXT_LENGTH,
            compression_enabled=True,
        )
        engine.should_compress(loop.current_prompt_tokens())

    def checks_and_marks() -> MarkedHistory:
        checks()
        return loop.marked_history(context)

    def kept_body() -> WireBody:
        history = checks_and_marks()
        return wire.body(
            history.messages, history.marked, schemas, model=MODEL, max_tokens=MAX_TOKENS
        )

    def full_conversion() -> bytes:
        checks()
        return full_body(loop.build_request(context), schemas, model=MODEL, max_tokens=MAX_TOKENS)

    kept_body()  # the session's first call converts everything once
    kept = _percentiles(_time(rounds, kept_body, new_message))
    full = _percentiles(_time(_full_rounds(size, rounds), full_conversion, new_message))
    if kept_body().to_bytes() != full_conversion():
        raise AssertionError("the kept body differs from a full conversion")
    return {
        "checks + cache marks": _percentiles(_time(rounds, checks_and_marks, new_message)),
        "per-turn path incl. body (kept)": kept,
        "full re-conversion incl. body": full,
        "ratio full / kept": (full[0] / kept[0], full[1] / kept[1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    asyncio.set_event_loop(asyncio.new_event_loop())
    for size in args.sizes:
        for name, (p50, p95) in bench_size(size, args.rounds).items():
            unit = "x " if name.startswith("ratio") else "ms"
            print(f"{size:>7} messages  {name:<32} p50 {p50:9.3f} {unit}  p95 {p95:9.3f} {unit}")


if __name__ == "__main__":
    main()

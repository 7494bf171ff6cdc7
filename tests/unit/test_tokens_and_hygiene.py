"""Token counting works offline and counts once; hygiene fires at 85% with 4+ messages."""

from __future__ import annotations

import subprocess
import sys

from agent.policy.hygiene import HYGIENE_THRESHOLD, needs_hygiene
from agent.tokens import (
    IMAGE_TOKENS,
    cache_message_tokens,
    count_text_tokens,
    estimate_messages_tokens_rough,
)


def test_tiktoken_counter_loads_with_no_network_in_a_fresh_cache(tmp_path):
    # A fresh process with an empty cache folder and no route to the internet must still count.
    code = "from agent.tokens import count_text_tokens; print(count_text_tokens('hello world'))"
    env = {
        "HERMES_TIKTOKEN_CACHE": str(tmp_path / "tk"),
        "PATH": "",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


def test_special_token_text_is_counted_as_plain_text():
    assert count_text_tokens("a <|endoftext|> b") > 3


def test_message_count_is_computed_once_and_kept():
    message = {"role": "user", "content": "count me " * 50}
    first = cache_message_tokens(message)
    assert message["_tokens"] == first
    message["content"] = "changed"  # a stored count is trusted, never recomputed
    assert cache_message_tokens(message) == first


def test_rough_estimate_is_about_four_characters_per_token_and_images_are_flat():
    text_only = [{"role": "user", "content": "x" * 4000}]
    assert 990 <= estimate_messages_tokens_rough(text_only) <= 1010
    with_image = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..."}}]}
    ]
    assert estimate_messages_tokens_rough(with_image) >= IMAGE_TOKENS


def _history(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 else "assistant", "content": "hi"} for i in range(n)]


def test_hygiene_uses_the_reported_prompt_size_at_85_percent():
    history = _history(6)
    limit = 10_000
    assert needs_hygiene(
        history,
        last_prompt_tokens=int(limit * HYGIENE_THRESHOLD),
        context_length=limit,
        compression_enabled=True,
    )
    assert not needs_hygiene(
        history,
        last_prompt_tokens=int(limit * HYGIENE_THRESHOLD) - 1,
        context_length=limit,
        compression_enabled=True,
    )


def test_hygiene_falls_back_to_the_rough_estimate_without_api_usage():
    history = [{"role": "user", "content": "x" * 40_000}, *_history(4)]
    assert needs_hygiene(
        history, last_prompt_tokens=None, context_length=11_000, compression_enabled=True
    )
    assert not needs_hygiene(
        history, last_prompt_tokens=None, context_length=20_000, compression_enabled=True
    )


def test_hygiene_needs_four_messages_and_compression_enabled():
    big = [{"role": "user", "content": "x" * 40_000}] * 3
    assert not needs_hygiene(
        big, last_prompt_tokens=None, context_length=1_000, compression_enabled=True
    )
    assert not needs_hygiene(
        big * 2, last_prompt_tokens=None, context_length=1_000, compression_enabled=False
    )

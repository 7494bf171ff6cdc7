"""How the Anthropic emulator sees a request's prompt: ordered blocks, token counts, prefix keys.

The prompt is flattened in cache order, tools -> system -> messages, into one block per tool
definition, per system text block and per message content block (a string content is one text
block). Every token of the prompt is attributed to exactly one block, so the size of any prefix
is a running sum and ``input + cache_read + cache_creation`` always equals the full count.

Token counting is a deterministic approximation of Claude's tokenizer. It intentionally differs
from the client's tiktoken estimate, as the real tokenizer does:

- text (text blocks, system blocks, string contents): ``ceil(len(text) / 4)``
  + ``BLOCK_OVERHEAD_TOKENS`` per block;
- each message: ``MESSAGE_OVERHEAD_TOKENS``, carried by its first block;
- a tool definition: ``ceil(len(its canonical JSON) / 4)`` + ``TOOL_DEFINITION_OVERHEAD_TOKENS``;
  when any tool is offered, the first one also carries ``TOOLS_PREAMBLE_TOKENS`` (the real API
  adds a tool-use system prompt of about that size);
- tool_use: ``ceil(len(name + canonical JSON of input) / 4)`` + block overhead;
- tool_result: its content counted as above + block overhead;
- image: ``width x height / 750`` after the API's downsizing to a 1568 px long edge; a PDF
  document its pages (see :mod:`sandbox.anthropic_media`); a flat ``IMAGE_TOKENS`` for what
  cannot be measured (a URL source);
- anything else: its canonical JSON, as text.

``cache_control`` markers never count and never change a prefix key, so moving a breakpoint
from one turn to the next keeps the earlier prefix addressable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sandbox.anthropic_media import document_block_tokens, image_block_tokens

CHARS_PER_TOKEN = 4
BLOCK_OVERHEAD_TOKENS = 2
MESSAGE_OVERHEAD_TOKENS = 4
TOOL_DEFINITION_OVERHEAD_TOKENS = 8
TOOLS_PREAMBLE_TOKENS = 346
IMAGE_TOKENS = 1_500
DEFAULT_CACHE_TTL = "5m"
AUTOMATIC_CACHE_LOCATION = "cache_control"
"""Location name of a top-level (automatic caching) marker; it applies to the last block."""


def text_tokens(text: str) -> int:
    """Tokens of a piece of text under the emulator's rule of four characters per token."""
    return -(-len(text) // CHARS_PER_TOKEN)


def canonical_json(value: Any) -> str:
    """Stable JSON text of a value (sorted keys, no spaces), used for counting and hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def without_cache_control(block: dict[str, Any]) -> dict[str, Any]:
    """A copy of a block with its cache_control markers removed (also inside tool_result)."""
    clean = {key: value for key, value in block.items() if key != "cache_control"}
    nested = clean.get("content")
    if clean.get("type") == "tool_result" and isinstance(nested, list):
        clean["content"] = [
            without_cache_control(part) if isinstance(part, dict) else part for part in nested
        ]
    return clean


def content_block_tokens(block: dict[str, Any]) -> int:
    """Tokens of one message or system content block (message overhead not included)."""
    kind = block.get("type")
    if kind == "text":
        return text_tokens(str(block.get("text", ""))) + BLOCK_OVERHEAD_TOKENS
    if kind == "image":
        return image_block_tokens(block) or IMAGE_TOKENS
    if kind == "tool_use":
        name = str(block.get("name", ""))
        return text_tokens(name + canonical_json(block.get("input", {}))) + BLOCK_OVERHEAD_TOKENS
    if kind == "tool_result":
        return _tool_result_content_tokens(block.get("content")) + BLOCK_OVERHEAD_TOKENS
    if kind == "thinking":
        return text_tokens(str(block.get("thinking", ""))) + BLOCK_OVERHEAD_TOKENS
    if kind == "redacted_thinking":
        return text_tokens(str(block.get("data", ""))) + BLOCK_OVERHEAD_TOKENS
    if kind == "document":
        source = block.get("source")
        if isinstance(source, dict) and source.get("type") == "text":
            return text_tokens(str(source.get("data", ""))) + BLOCK_OVERHEAD_TOKENS
        return document_block_tokens(block) or IMAGE_TOKENS
    return text_tokens(canonical_json(without_cache_control(block))) + BLOCK_OVERHEAD_TOKENS


def _tool_result_content_tokens(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        return sum(content_block_tokens(part) for part in content if isinstance(part, dict))
    return text_tokens(canonical_json(content))


def tool_definition_tokens(tool: dict[str, Any]) -> int:
    """Tokens of one tool definition (the tools preamble not included)."""
    return (
        text_tokens(canonical_json(without_cache_control(tool))) + TOOL_DEFINITION_OVERHEAD_TOKENS
    )


def output_tokens(content: list[dict[str, Any]]) -> int:
    """Tokens the emulator bills as output for a reply's content blocks."""
    total = 0
    for block in content:
        if block.get("type") == "text":
            total += text_tokens(str(block.get("text", "")))
        else:
            total += content_block_tokens(block)
    return total


def list_field(body: dict[str, Any], key: str) -> list[Any]:
    """A request field that should be a list, or an empty list when it is missing or not one."""
    value = body.get(key)
    return value if isinstance(value, list) else []


def message_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def system_blocks(system: Any) -> list[dict[str, Any]]:
    """The system prompt as a list of text blocks (an empty string is no block)."""
    if isinstance(system, str):
        return [{"type": "text", "text": system}] if system else []
    if isinstance(system, list):
        return [block for block in system if isinstance(block, dict)]
    return []


def block_cache_control(block: dict[str, Any]) -> Any:
    """The cache_control marker a block carries, or None.

    A marker inside a tool_result's content counts as a marker on the tool_result block.
    """
    if "cache_control" in block and block["cache_control"] is not None:
        return block["cache_control"]
    nested = block.get("content")
    if block.get("type") == "tool_result" and isinstance(nested, list):
        for part in nested:
            if isinstance(part, dict) and part.get("cache_control") is not None:
                return part["cache_control"]
    return None


def iter_cache_controls(body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every (location, marker) breakpoint of a request, in cache order."""
    for index, tool in enumerate(list_field(body, "tools")):
        if isinstance(tool, dict) and tool.get("cache_control") is not None:
            yield f"tools.{index}", tool["cache_control"]
    for index, block in enumerate(list_field(body, "system")):
        if isinstance(block, dict) and block.get("cache_control") is not None:
            yield f"system.{index}", block["cache_control"]
    for m_index, message in enumerate(list_field(body, "messages")):
        content = message.get("content") if isinstance(message, dict) else None
        for b_index, block in enumerate(content if isinstance(content, list) else []):
            marker = block_cache_control(block) if isinstance(block, dict) else None
            if marker is not None:
                yield f"messages.{m_index}.content.{b_index}", marker
    if body.get("cache_control") is not None:
        yield AUTOMATIC_CACHE_LOCATION, body["cache_control"]


def marker_ttl(marker: Any) -> str:
    """The TTL a cache_control marker asks for ("5m" unless it says "1h")."""
    if isinstance(marker, dict) and marker.get("ttl") is not None:
        return str(marker["ttl"])
    return DEFAULT_CACHE_TTL


@dataclass(frozen=True)
class PromptBlock:
    """One block of the flattened prompt.

    ``key`` identifies the whole prefix ending at this block (model included); ``cache_ttl``
    is set when the block carries a breakpoint.
    """

    location: str
    tokens: int
    key: str
    cache_ttl: str | None = None


@dataclass(frozen=True)
class Prompt:
    """A request's prompt in cache order, with running token totals."""

    model: str
    blocks: tuple[PromptBlock, ...]
    prefix_tokens: tuple[int, ...]

    @property
    def total_tokens(self) -> int:
        """The prompt's full size in tokens."""
        return self.prefix_tokens[-1] if self.prefix_tokens else 0

    @property
    def breakpoints(self) -> list[int]:
        """Indices of the blocks that carry a cache breakpoint, in order."""
        return [index for index, block in enumerate(self.blocks) if block.cache_ttl is not None]


@dataclass(frozen=True)
class _RawBlock:
    location: str
    tokens: int
    identity: str
    marker: Any


def _raw_blocks(body: dict[str, Any]) -> list[_RawBlock]:
    raw: list[_RawBlock] = []
    tools = list_field(body, "tools")
    for index, tool in enumerate(tool for tool in tools if isinstance(tool, dict)):
        tokens = tool_definition_tokens(tool) + (TOOLS_PREAMBLE_TOKENS if index == 0 else 0)
        identity = canonical_json(["tools", without_cache_control(tool)])
        raw.append(_RawBlock(f"tools.{index}", tokens, identity, tool.get("cache_control")))
    for index, block in enumerate(system_blocks(body.get("system"))):
        identity = canonical_json(["system", without_cache_control(block)])
        raw.append(
            _RawBlock(
                f"system.{index}", content_block_tokens(block), identity, block_cache_control(block)
            )
        )
    messages = list_field(body, "messages")
    for m_index, message in enumerate(m for m in messages if isinstance(m, dict)):
        raw.extend(_message_raw_blocks(m_index, message))
    return raw


def _message_raw_blocks(m_index: int, message: dict[str, Any]) -> list[_RawBlock]:
    role = str(message.get("role"))
    blocks = message_blocks(message.get("content"))
    if not blocks:
        # An empty final prefill still costs its message framing.
        identity = canonical_json(["messages", role, True, None])
        return [_RawBlock(f"messages.{m_index}", MESSAGE_OVERHEAD_TOKENS, identity, None)]
    raw = []
    for b_index, block in enumerate(blocks):
        tokens = content_block_tokens(block) + (MESSAGE_OVERHEAD_TOKENS if b_index == 0 else 0)
        identity = canonical_json(["messages", role, b_index == 0, without_cache_control(block)])
        location = f"messages.{m_index}.content.{b_index}"
        raw.append(_RawBlock(location, tokens, identity, block_cache_control(block)))
    return raw


def build_prompt(body: dict[str, Any]) -> Prompt:
    """Flatten a (validated) Messages request into its prompt blocks."""
    model = str(body.get("model", ""))
    raw = _raw_blocks(body)
    automatic = body.get("cache_control")
    running_key = hashlib.sha256(f"model:{model}".encode()).hexdigest()
    running_tokens = 0
    blocks: list[PromptBlock] = []
    prefix_tokens: list[int] = []
    for index, item in enumerate(raw):
        running_key = hashlib.sha256((running_key + item.identity).encode()).hexdigest()
        running_tokens += item.tokens
        marker = item.marker
        if marker is None and automatic is not None and index == len(raw) - 1:
            marker = automatic
        ttl = marker_ttl(marker) if marker is not None else None
        blocks.append(PromptBlock(item.location, item.tokens, running_key, ttl))
        prefix_tokens.append(running_tokens)
    return Prompt(model=model, blocks=tuple(blocks), prefix_tokens=tuple(prefix_tokens))


def count_prompt_tokens(body: dict[str, Any]) -> int:
    """The full prompt size of a request, as the emulator counts and bills it."""
    return build_prompt(body).total_tokens

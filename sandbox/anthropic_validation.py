"""Request validation of the Anthropic emulator: the 400 errors the real Messages API returns.

Each check raises `InvalidRequest` with a message in the API's style (a dotted location, then
what is wrong), so code under test meets the same refusals it would meet in production.
"""

from __future__ import annotations

import re
from typing import Any

from sandbox.anthropic_media import MediaError, check_request_media
from sandbox.anthropic_prompt import iter_cache_controls, message_blocks

MAX_CACHE_BREAKPOINTS = 4
CACHE_TTLS = ("5m", "1h")
TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_CHOICE_TYPES = ("auto", "any", "tool", "none")
MAX_TEMPERATURE = 1.0

MESSAGES_FIELDS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "tools", "tool_choice", "stream",
        "temperature", "top_p", "top_k", "stop_sequences", "metadata", "thinking",
        "service_tier", "container", "mcp_servers", "context_management", "output_config",
        "output_format", "cache_control", "inference_geo", "speed", "diagnostics", "betas",
    }
)  # fmt: skip
USER_BLOCK_TYPES = frozenset({"text", "image", "document", "tool_result", "search_result"})
TOOL_RESULT_BLOCK_TYPES = frozenset({"text", "image", "search_result", "document"})
"""What a tool_result's content list may hold."""
ASSISTANT_BLOCK_TYPES = frozenset(
    {"text", "tool_use", "thinking", "redacted_thinking", "server_tool_use"}
)


class InvalidRequest(Exception):
    """A request the real API would refuse with 400 invalid_request_error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def validate_request(
    body: Any, *, strict_alternation: bool = True, require_max_tokens: bool = True
) -> None:
    """Raise `InvalidRequest` for the first rule a Messages (or count_tokens) body breaks."""
    if not isinstance(body, dict):
        raise InvalidRequest("Request body must be a JSON object")
    _check_top_level(body, require_max_tokens)
    tool_names = _check_tools(body.get("tools"))
    _check_tool_choice(body.get("tool_choice"), tool_names)
    _check_system(body.get("system"))
    _check_messages(body["messages"], strict_alternation)
    try:
        check_request_media(body["messages"])
    except MediaError as exc:
        raise InvalidRequest(str(exc)) from exc
    _check_tool_pairing(body["messages"], tool_names)
    _check_cache_controls(body)


def _check_top_level(body: dict[str, Any], require_max_tokens: bool) -> None:
    for field in body:
        if field not in MESSAGES_FIELDS:
            raise InvalidRequest(f"{field}: Extra inputs are not permitted")
    if "model" not in body:
        raise InvalidRequest("model: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise InvalidRequest("model: Input should be a valid non-empty string")
    if require_max_tokens:
        if "max_tokens" not in body:
            raise InvalidRequest("max_tokens: Field required")
        max_tokens = body["max_tokens"]
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
            raise InvalidRequest("max_tokens: Input should be a valid integer")
        if max_tokens < 1:
            raise InvalidRequest("max_tokens: Input should be greater than or equal to 1")
    if "messages" not in body:
        raise InvalidRequest("messages: Field required")
    if not isinstance(body["messages"], list):
        raise InvalidRequest("messages: Input should be a valid list")
    if not body["messages"]:
        raise InvalidRequest("messages: at least one message is required")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise InvalidRequest("stream: Input should be a valid boolean")
    temperature = body.get("temperature")
    if isinstance(temperature, int | float) and not 0 <= temperature <= MAX_TEMPERATURE:
        raise InvalidRequest("temperature: Input should be between 0 and 1")
    stops = body.get("stop_sequences")
    if stops is not None and not (
        isinstance(stops, list) and all(isinstance(s, str) for s in stops)
    ):
        raise InvalidRequest("stop_sequences: Input should be a valid list of strings")


def _check_tools(tools: Any) -> set[str] | None:
    """Validate the tool list; return the offered names, or None when no tools are given."""
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list")
    names: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise InvalidRequest(f"tools.{index}: Input should be a valid dictionary")
        name = tool.get("name")
        if not isinstance(name, str):
            raise InvalidRequest(f"tools.{index}.name: Field required")
        if not TOOL_NAME_PATTERN.match(name):
            raise InvalidRequest(
                f"tools.{index}.name: String should match pattern '{TOOL_NAME_PATTERN.pattern}'"
            )
        is_custom = tool.get("type") in (None, "custom")
        if is_custom and not isinstance(tool.get("input_schema"), dict):
            raise InvalidRequest(f"tools.{index}.custom.input_schema: Field required")
        if name in names:
            raise InvalidRequest("tools: Tool names must be unique.")
        names.add(name)
    return names


def _check_tool_choice(tool_choice: Any, tool_names: set[str] | None) -> None:
    if tool_choice is None:
        return
    if not isinstance(tool_choice, dict) or tool_choice.get("type") not in TOOL_CHOICE_TYPES:
        raise InvalidRequest("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
    if tool_names is None and tool_choice["type"] != "none":
        raise InvalidRequest(
            "tool_choice: tool_choice may only be specified while providing tools."
        )
    if tool_choice["type"] == "tool":
        name = tool_choice.get("name")
        if not isinstance(name, str):
            raise InvalidRequest("tool_choice.tool.name: Field required")
        if name not in (tool_names or set()):
            raise InvalidRequest(f"tool_choice.name: Tool '{name}' not found in provided tools")


def _check_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise InvalidRequest("system: Input should be a valid string or list of text blocks")
    for index, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise InvalidRequest(f"system.{index}.type: Input should be 'text'")
        _check_text(block.get("text"), f"system.{index}.text", "system")


def _check_text(text: Any, location: str, scope: str) -> None:
    if not isinstance(text, str):
        raise InvalidRequest(f"{location}: Input should be a valid string")
    if not text:
        raise InvalidRequest(f"{scope}: text content blocks must be non-empty")
    if not text.strip():
        raise InvalidRequest(f"{scope}: text content blocks must contain non-whitespace text")


def _check_messages(messages: list[Any], strict_alternation: bool) -> None:
    previous_role: str | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidRequest(f"messages.{index}: Input should be a valid dictionary")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise InvalidRequest(f"messages.{index}.role: Input should be 'user' or 'assistant'")
        if index == 0 and role != "user":
            raise InvalidRequest('messages: first message must use the "user" role')
        if strict_alternation and role == previous_role:
            raise InvalidRequest(
                'messages: roles must alternate between "user" and "assistant", '
                f'but found multiple "{role}" roles in a row'
            )
        is_final_assistant = role == "assistant" and index == len(messages) - 1
        _check_content(message, index, role, is_final_assistant)
        previous_role = role


def _check_content(message: dict[str, Any], index: int, role: str, is_final_prefill: bool) -> None:
    if "content" not in message:
        raise InvalidRequest(f"messages.{index}.content: Field required")
    content = message["content"]
    if not isinstance(content, str | list):
        raise InvalidRequest(f"messages.{index}.content: Input should be a valid string or list")
    if not content:
        if is_final_prefill:
            return
        raise InvalidRequest(
            f"messages.{index}: all messages must have non-empty content except for the "
            "optional final assistant message"
        )
    if isinstance(content, str):
        if is_final_prefill and content != content.rstrip():
            raise InvalidRequest(
                "messages: final assistant content cannot end with trailing whitespace"
            )
        _check_text(content, f"messages.{index}.content", "messages")
        return
    allowed = USER_BLOCK_TYPES if role == "user" else ASSISTANT_BLOCK_TYPES
    for b_index, block in enumerate(content):
        location = f"messages.{index}.content.{b_index}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise InvalidRequest(f"{location}.type: Field required")
        if block["type"] not in allowed:
            raise InvalidRequest(
                f"{location}: '{block['type']}' blocks are not allowed in {role} messages"
            )
        _check_block_fields(block, location)
    last = content[-1]
    if is_final_prefill and last.get("type") == "text" and last["text"] != last["text"].rstrip():
        raise InvalidRequest(
            "messages: final assistant content cannot end with trailing whitespace"
        )


def _check_block_fields(block: dict[str, Any], location: str) -> None:
    kind = block["type"]
    if kind == "text":
        _check_text(block.get("text"), f"{location}.text", "messages")
    elif kind == "tool_use":
        for field in ("id", "name"):
            if not isinstance(block.get(field), str) or not block[field]:
                raise InvalidRequest(f"{location}.{field}: Field required")
        if not isinstance(block.get("input"), dict):
            raise InvalidRequest(f"{location}.input: Input should be a valid dictionary")
    elif kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str) or not block["tool_use_id"]:
            raise InvalidRequest(f"{location}.tool_use_id: Field required")
        nested = block.get("content")
        for n_index, part in enumerate(nested if isinstance(nested, list) else []):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in TOOL_RESULT_BLOCK_TYPES:
                raise InvalidRequest(
                    f"{location}.content.{n_index}.type: Input should be "
                    "'text', 'image', 'search_result' or 'document'"
                )
            if kind == "text":
                _check_text(part.get("text"), f"{location}.content.{n_index}.text", "messages")


def _tool_use_blocks(message: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [
        (b_index, block)
        for b_index, block in enumerate(message_blocks(message["content"]))
        if block.get("type") == "tool_use"
    ]


def _check_tool_pairing(messages: list[dict[str, Any]], tool_names: set[str] | None) -> None:
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            _check_tool_uses(messages, index, tool_names, seen_ids)
        else:
            _check_tool_results(messages, index)


def _check_tool_uses(
    messages: list[dict[str, Any]], index: int, tool_names: set[str] | None, seen_ids: set[str]
) -> None:
    uses = _tool_use_blocks(messages[index])
    for b_index, block in uses:
        location = f"messages.{index}.content.{b_index}"
        if block["id"] in seen_ids:
            raise InvalidRequest(f"{location}: `tool_use` ids must be unique")
        seen_ids.add(block["id"])
        if tool_names is not None and block["name"] not in tool_names:
            raise InvalidRequest(
                f"{location}.name: tool '{block['name']}' is not one of the provided tools"
            )
    following = messages[index + 1] if index + 1 < len(messages) else None
    answered = set()
    if following is not None and following["role"] == "user":
        answered = {
            block.get("tool_use_id")
            for block in message_blocks(following["content"])
            if block.get("type") == "tool_result"
        }
    missing = [block["id"] for _, block in uses if block["id"] not in answered]
    if missing:
        raise InvalidRequest(
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )


def _check_tool_results(messages: list[dict[str, Any]], index: int) -> None:
    previous = messages[index - 1] if index > 0 else None
    offered = set()
    if previous is not None and previous["role"] == "assistant":
        offered = {block["id"] for _, block in _tool_use_blocks(previous)}
    for b_index, block in enumerate(message_blocks(messages[index]["content"])):
        if block.get("type") == "tool_result" and block["tool_use_id"] not in offered:
            raise InvalidRequest(
                f"messages.{index}.content.{b_index}: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {block['tool_use_id']}. Each `tool_result` block must "
                "have a corresponding `tool_use` block in the previous message."
            )


def _check_cache_controls(body: dict[str, Any]) -> None:
    markers = list(iter_cache_controls(body))
    for location, marker in markers:
        if not isinstance(marker, dict) or marker.get("type") != "ephemeral":
            raise InvalidRequest(f"{location}.cache_control.type: Input should be 'ephemeral'")
        if marker.get("ttl") is not None and marker["ttl"] not in CACHE_TTLS:
            raise InvalidRequest(f"{location}.cache_control.ttl: Input should be '5m' or '1h'")
    if len(markers) > MAX_CACHE_BREAKPOINTS:
        raise InvalidRequest(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(markers)}."
        )
    seen_5m = False
    for _location, marker in markers:
        ttl = marker.get("ttl") or "5m"
        if ttl == "1h" and seen_5m:
            raise InvalidRequest(
                "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control "
                "block. Note that blocks are processed in the following order: `tools`, "
                "`system`, `messages`."
            )
        seen_5m = seen_5m or ttl == "5m"

"""What a tool in a request must look like for every supported provider (pure functions).

The strictest rule of the providers is kept: a name of 1 to 64 characters from
``[a-zA-Z0-9_-]`` (Anthropic allows 128, OpenAI-compatible endpoints 64) and an input schema
that is a JSON object schema (``"type": "object"``) the request can carry as JSON. A tool that
breaks the rule is left out of the request; it never makes the whole request invalid.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from jsonschema import Draft202012Validator, SchemaError

MAX_TOOL_NAME_CHARS = 64
"""OpenAI-compatible endpoints refuse longer names (Anthropic's limit is 128)."""
TOOL_NAME_RULE = re.compile(rf"[a-zA-Z0-9_-]{{1,{MAX_TOOL_NAME_CHARS}}}")
"""A tool name every supported provider accepts (matched whole)."""
SCHEMA_CHECKS_KEPT = 4096
"""Distinct schemas whose check is remembered (a session offers a few dozen tools)."""
MAX_REASON_CHARS = 100


def tool_name_problem(name: object) -> str | None:
    """Why a provider would refuse ``name`` as a tool name; None when every provider takes it."""
    if not isinstance(name, str) or not name:
        return "the name is empty"
    if len(name) > MAX_TOOL_NAME_CHARS:
        return f"the name is longer than {MAX_TOOL_NAME_CHARS} characters"
    if not TOOL_NAME_RULE.fullmatch(name):
        return "the name has characters outside [a-zA-Z0-9_-]"
    return None


def input_schema_problem(schema: object) -> str | None:
    """Why a provider would refuse ``schema`` as a tool's input schema; None when it is fine."""
    if not isinstance(schema, dict):
        return "its input schema is not a JSON object"
    if schema.get("type") != "object":
        return 'its input schema\'s type is not "object"'
    try:
        text = json.dumps(schema, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError):
        return "its input schema is not plain JSON"
    return _json_schema_problem(text)


@functools.lru_cache(maxsize=SCHEMA_CHECKS_KEPT)
def _json_schema_problem(text: str) -> str | None:
    """Why the schema (as JSON text) is no valid JSON Schema; checked once per schema, since
    every request is checked."""
    try:
        Draft202012Validator.check_schema(json.loads(text))
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path) or "its root"
        message = (
            exc.message
            if len(exc.message) <= MAX_REASON_CHARS
            else exc.message[:MAX_REASON_CHARS] + "…"
        )
        return f"its input schema is not valid JSON Schema (at {where}: {message})"
    return None


def tool_problem(schema: dict[str, Any]) -> str | None:
    """Why a provider would refuse this tool entry of a request (name, description, input
    schema); None when every supported provider takes it."""
    problem = tool_name_problem(schema.get("name"))
    if problem is None and not isinstance(schema.get("description", ""), str):
        problem = "its description is not text"
    return problem or input_schema_problem(schema.get("input_schema"))

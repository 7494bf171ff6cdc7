"""The names the model calls MCP tools by: ``<server>__<tool>`` when that is a name every
provider accepts, otherwise a readable form of it that is (pure functions, no I/O).

A server's tool may be named anything (``files.read``, a 70-character name): such a name is
mapped to ``[a-zA-Z0-9_-]`` characters, cut to fit, and given a short hash of the full name,
so it is unique and the same on every run (a restart keeps the cached prefix).
"""

from __future__ import annotations

import hashlib
import re

from agent.tools.tool_schemas import MAX_TOOL_NAME_CHARS, tool_name_problem

TOOL_NAME_SEPARATOR = "__"
UNSAFE_CHARACTERS = re.compile(r"[^a-zA-Z0-9_-]")
HASH_CHARS = 8
"""Hex digits of the full name's SHA-256 kept in a mapped name: unique in practice."""


def model_tool_name(server: str, tool: str) -> str:
    """The name the model calls ``server``'s ``tool`` by: ``<server>__<tool>`` when valid for
    every provider, else that name with other characters as ``_``, cut, and a hash suffix."""
    full = f"{server}{TOOL_NAME_SEPARATOR}{tool}"
    if tool_name_problem(full) is None:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:HASH_CHARS]
    readable = UNSAFE_CHARACTERS.sub("_", full)[: MAX_TOOL_NAME_CHARS - HASH_CHARS - 1]
    return f"{readable}_{digest}"

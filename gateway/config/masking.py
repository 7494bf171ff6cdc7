"""What ``hermes config check`` prints: the effective configuration, every secret masked.

Secrets never sit in the file (they come from the environment or ``.env``), yet a value can
still carry one: a header written out in full, a token among a server's arguments, a password
in a URL. So the printed configuration shows

* ``***`` for a value whose key names a secret (``token``, ``key``, ``secret``,
  ``password``); an ``*_env`` key is the *name* of a variable and is shown;
* an MCP server's ``headers`` as their templates (``Bearer ${SEARCH_TOKEN}`` as written: the
  value is filled from the environment only when the server is connected), and a header
  without any ``${VAR}`` as ``***``; ``env`` is a list of names and is shown;
* ``***`` for the argument after a secret-looking flag (``--token X``, ``--api-key=X``);
* URLs without their password or any secret-looking query value.

The same values are handed to the log sanitizer (:func:`literal_secrets`): a library logging
a URL or a command line masks them too. Last, ``hermes config check`` replaces every value of
the variables the configuration takes secrets from wherever it still appears.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from gateway.config.schema import Config
from gateway.settings.mcp import HEADER_VARIABLE
from gateway.text.redaction import MASK

SECRET_HINTS = ("token", "key", "secret", "password")
"""A key containing one of these holds a secret (unless it ends in ``_env``)."""
SECRET_FLAG = re.compile(r"^--?[\w-]*(token|key|secret|password|auth|credential)[\w-]*", re.I)
"""A command-line flag whose value is a secret (``--api-key``, ``-token``, ``--auth``)."""
URL_IN_TEXT = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"']+")
"""A URL inside an argument (a connection string may carry a password)."""
SECRET_QUERY = re.compile(r"token|key|secret|password|auth|sig", re.I)
"""A URL query parameter holding a secret (``?api_key=...``, ``&sig=...``)."""


def is_secret_key(key: str) -> bool:
    """Whether a configuration key holds a secret value (not a variable's name)."""
    lowered = key.lower()
    if lowered.endswith("_env"):
        return False
    # By whole words: ``api_key`` and ``bot_token`` are secrets, ``max_tool_result_tokens``
    # (a count) is not.
    words = re.split(r"[^a-z0-9]+", lowered)
    return any(word in SECRET_HINTS or word.endswith(("apikey", "password")) for word in words)


def mask_header(value: str, found: set[str] | None = None) -> str:
    """A header as its template when its secret comes from ``${VAR}``; else ``***``."""
    if HEADER_VARIABLE.search(value):
        return value
    _note(found, value)
    return MASK


def mask_args(args: list[Any], found: set[str] | None = None) -> list[Any]:
    """A command line with the value of every secret-looking flag masked."""
    masked: list[Any] = []
    hide_next = False
    for arg in args:
        text = str(arg)
        if hide_next:
            _note(found, text)
            masked.append(MASK)
            hide_next = False
        elif SECRET_FLAG.match(text) and "=" in text:
            flag, value = text.split("=", 1)
            _note(found, value)
            masked.append(f"{flag}={MASK}")
        else:
            masked.append(_urls_masked(text, found) if URL_IN_TEXT.search(text) else arg)
            hide_next = bool(SECRET_FLAG.match(text))
    return masked


def _urls_masked(text: str, found: set[str] | None) -> str:
    """``text`` with every URL in it (``--db=postgresql://user:pw@host/db``) masked."""
    return URL_IN_TEXT.sub(lambda match: mask_url_secrets(match.group(0), found), text)


def mask_url_secrets(url: str, found: set[str] | None = None) -> str:
    """A URL without its password and without secret-looking query values."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        _note(found, url)
        return MASK  # not parsable: it could hide anything
    netloc = parts.netloc
    if parts.password is not None:
        _note(found, parts.password)
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:{MASK}@{host}" + (f":{port}" if port else "")
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = parts.query
    if any(SECRET_QUERY.search(name) for name, _ in pairs):
        masked = []
        for name, value in pairs:
            if SECRET_QUERY.search(name):
                _note(found, value)
                value = MASK
            masked.append((name, value))
        query = urlencode(masked, safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _note(found: set[str] | None, secret: str) -> None:
    if found is not None and secret:
        found.add(secret)


def _mask(node: Any, key: str, found: set[str]) -> Any:
    if isinstance(node, dict):
        if key == "headers":
            return {name: mask_header(str(value), found) for name, value in node.items()}
        return {k: _mask(v, k, found) for k, v in node.items()}
    if isinstance(node, list):
        return mask_args(node, found) if key == "args" else [_mask(v, key, found) for v in node]
    if isinstance(node, str):
        if is_secret_key(key):
            _note(found, node)
            return MASK
        if "://" in node:
            return mask_url_secrets(node, found)
    return node


def masked_config(config: Config, redact: Callable[[str], str] | None = None) -> dict[str, Any]:
    """The effective configuration as a dict, every secret-looking value masked (see the
    module docstring); ``redact`` then rewrites every text left (the log sanitizer's, which
    masks the configured secrets' values wherever they still appear)."""
    masked: dict[str, Any] = _mask(config.model_dump(mode="json"), "", set())
    return masked if redact is None else _redacted(masked, redact)


def _redacted(node: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(node, dict):
        return {k: _redacted(v, redact) for k, v in node.items()}
    if isinstance(node, list):
        return [_redacted(v, redact) for v in node]
    return redact(node) if isinstance(node, str) else node


def literal_secrets(config: Config) -> set[str]:
    """The secrets written into the configuration itself (what :func:`masked_config` hides):
    the log sanitizer masks them too, since libraries log URLs and command lines."""
    found: set[str] = set()
    _mask(config.model_dump(mode="json"), "", found)
    return found

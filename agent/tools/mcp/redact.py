"""Secrets masked out of what a server prints or what a user configured, before it is shown or
logged (pure functions): known secret values, passwords in URLs, ``token=...`` style pairs and
bearer tokens."""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
MIN_SECRET_CHARS = 4
"""Shorter values are not masked one by one (masking every ``1`` would garble everything)."""
URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(?=@)")
SECRET_PAIR = re.compile(
    r"(?P<head>\b[\w.-]*(?:token|secret|password|passwd|pwd|api[_-]?key|auth)[\w.-]*"
    r"[\"']?\s*[=:]\s*[\"']?)[^\s\"'&,;]+",
    re.IGNORECASE,
)
BEARER = re.compile(r"(?P<head>\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def redacted(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret value and every secret-looking part masked."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    for pattern in (URL_PASSWORD, BEARER, SECRET_PAIR):
        text = pattern.sub(lambda m: m.group("head") + MASK, text)
    return text


def shortened(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""The Discord emulator's REST rate limits: fixed windows per route bucket, Discord's 429s."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from aiohttp import web


@dataclass
class _Window:
    started: float
    used: int


class RateLimiter:
    """Fixed-window request counting per (route bucket, major parameter), as headers report."""

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit = limit
        self.window_s = window_s
        self.limited_count = 0
        self._windows: dict[tuple[str, str], _Window] = {}

    def take(self, bucket: str, major: str) -> tuple[dict[str, str], float | None]:
        """Count one request; returns its rate-limit headers and retry_after when over."""
        now = time.time()
        window = self._windows.get((bucket, major))
        if window is None or now >= window.started + self.window_s:
            window = self._windows[(bucket, major)] = _Window(started=now, used=0)
        reset_at = window.started + self.window_s
        retry_after = None
        if window.used >= self.limit:
            retry_after = round(reset_at - now, 3)
            self.limited_count += 1
        else:
            window.used += 1
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.limit - window.used),
            "X-RateLimit-Reset": f"{reset_at:.3f}",
            "X-RateLimit-Reset-After": f"{reset_at - now:.3f}",
            "X-RateLimit-Bucket": bucket,
        }
        return headers, retry_after


def too_many_requests(retry_after: float) -> web.Response:
    """Discord's 429 for a route bucket: JSON body, Retry-After and the scope header."""
    body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
    response = web.Response(status=429, body=json.dumps(body).encode())
    response.headers["Content-Type"] = "application/json"
    response.headers["Retry-After"] = str(max(1, round(retry_after)))
    response.headers["X-RateLimit-Scope"] = "user"
    # discord.py treats a 429 without Via as a Cloudflare ban; Discord's own 429s carry it.
    response.headers["Via"] = "1.1 google"
    return response

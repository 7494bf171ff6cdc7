"""The HTTP endpoint Telegram POSTs updates to in webhook mode.

Telegram's only acknowledgement of a webhook update is the HTTP status: it drops the update after
a 2xx and sends it again after anything else. So an update is answered 200 only once the handler
returned (the runner has recorded it durably); when handling fails the answer is 500 and Telegram
redelivers, and the inbound table drops that copy if the first attempt was recorded after all.
A request without the secret token given to setWebhook is refused (403) before its body is read;
while stopping, 503 tells Telegram to come back later (it keeps the update queued meanwhile).
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from aiohttp import web

from gateway.settings.secrets import ConfigError

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
SECRET_BYTES = 32
"""Entropy of a generated secret token (token_urlsafe: about 43 characters)."""
MAX_SECRET_LENGTH = 256
"""Telegram accepts secret tokens of 1-256 characters from A-Z a-z 0-9 _ -."""
SHUTDOWN_TIMEOUT_SECONDS = 5.0
"""How long stopping waits for updates being recorded before it cancels them (they are
answered with an error then, so Telegram sends them again)."""
_SECRET_CHARACTERS = re.compile(r"[A-Za-z0-9_-]+")

UpdateHandler = Callable[[dict[str, Any]], Awaitable[None]]
"""Handles one decoded update; returns once it is safe to acknowledge it."""


class MalformedUpdate(ValueError):
    """The body is not a Telegram Update; answered 400."""


def webhook_secret(env_name: str) -> str:
    """The secret token from the environment variable, or a fresh random one for this run.

    ConfigError when the variable holds something Telegram would refuse.
    """
    value = os.environ.get(env_name, "").strip()
    if not value:
        return secrets.token_urlsafe(SECRET_BYTES)
    if len(value) > MAX_SECRET_LENGTH or not _SECRET_CHARACTERS.fullmatch(value):
        raise ConfigError(
            f"{env_name}: the Telegram webhook secret must be 1-{MAX_SECRET_LENGTH} characters "
            "from A-Z a-z 0-9 _ - (try: python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    return value


def public_webhook_url(configured: str, bound_port: int) -> str:
    """The URL given to setWebhook: `configured`, with a port of 0 replaced by the bound port.

    Port 0 in the URL only makes sense when Telegram (a local Bot API server, or a test's
    emulator) reaches the listener directly and ``webhook_port`` is 0 too.
    """
    parts = urlsplit(configured)
    if parts.port != 0:
        return configured
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}:{bound_port}" if userinfo else f"{host}:{bound_port}"
    return urlunsplit(parts._replace(netloc=netloc))


class WebhookServer:
    """Serves ``POST <path>`` on listen:port and hands each authentic update to a handler."""

    def __init__(
        self, *, listen: str, port: int, path: str, secret: str, handle: UpdateHandler
    ) -> None:
        self._listen = listen
        self._requested_port = port
        self._path = path
        self._secret = secret.encode()
        self._handle = handle
        self._runner: web.AppRunner | None = None
        self._accepting = False
        self.port: int | None = None
        """The port actually bound (``webhook_port`` 0 picks a free one); None until started."""

    @property
    def local_url(self) -> str:
        """Where the server listens, for the log."""
        return f"http://{self._listen}:{self.port}{self._path}"

    async def start(self) -> int:
        """Start listening; returns the bound port."""
        app = web.Application()
        app.router.add_post(self._path, self._receive)
        # access_log=None: one line per update would drown the log; errors are logged here.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_SECONDS)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._listen, self._requested_port)
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        self._accepting = True
        return self.port

    async def stop(self) -> None:
        """Answer 503 from now on, let updates being recorded finish, and close (idempotent)."""
        self._accepting = False
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            log.warning(
                "telegram webhook: refused a request from %s (wrong secret)", request.remote
            )
            return web.Response(status=403)
        if not self._accepting:
            return web.Response(status=503)
        try:
            data = await request.json()
        except ValueError as exc:
            log.warning("telegram webhook: body is not JSON (%s)", exc)
            return web.Response(status=400)
        if not isinstance(data, dict):
            log.warning("telegram webhook: body is JSON but not an object")
            return web.Response(status=400)
        try:
            await self._handle(data)
        except MalformedUpdate as exc:
            log.warning("telegram webhook: malformed update (%s)", exc)
            return web.Response(status=400)
        except Exception as exc:
            # Not acknowledged: Telegram sends it again (and the intake quarantines an update
            # that keeps failing); a copy that was recorded is dropped. By type only: the
            # error's text (SQL parameters, say) can quote the user's message.
            log.warning(
                "telegram webhook: handling update %s failed (%s); Telegram will send it again",
                data.get("update_id"),
                type(exc).__name__,
            )
            return web.Response(status=500)
        return web.Response(status=200)

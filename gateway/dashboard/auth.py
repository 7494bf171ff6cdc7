"""Who may see the dashboard: the holder of its token, and the browser it logged in.

The token comes from ``HERMES_DASHBOARD_TOKEN`` or is drawn at start and printed in a login
link. ``/login?token=...`` opens a session (a random id in an HTTP-only, same-site cookie,
kept in memory: a restart logs everyone out); a script may send ``Authorization: Bearer
<token>`` instead (a Prometheus scraper). Every change is a form POST carrying a CSRF token
derived from the session id, so another site cannot make a logged-in browser post one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "HERMES_DASHBOARD_TOKEN"
COOKIE = "hermes_dashboard"
CSRF_FIELD = "csrf"
OPEN_PATHS = frozenset({"/login"})
"""The only path served without a session: it is where one is opened."""


class DashboardAuth:
    """The dashboard's token, its open sessions and their CSRF tokens."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(32)
        self.from_environment = token is None and TOKEN_ENV in os.environ
        self._secret = secrets.token_bytes(32)
        self._sessions: set[str] = set()

    def check_token(self, candidate: str | None) -> bool:
        """Whether ``candidate`` is the dashboard's token (compared in constant time)."""
        return candidate is not None and hmac.compare_digest(
            candidate.encode(), self.token.encode()
        )

    def open_session(self) -> str:
        """A new session id for the cookie."""
        session = secrets.token_urlsafe(32)
        self._sessions.add(session)
        return session

    def session_of(self, connection: HTTPConnection) -> str | None:
        """The request's open session, else None."""
        session = connection.cookies.get(COOKIE)
        return session if session in self._sessions else None

    def authorised(self, connection: HTTPConnection) -> bool:
        """Whether the request comes from a logged-in browser or carries the token."""
        if self.session_of(connection) is not None:
            return True
        header = connection.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "bearer" and self.check_token(value.strip())

    def csrf_token(self, session: str) -> str:
        """The CSRF token every form of this session carries."""
        return hmac.new(self._secret, session.encode(), hashlib.sha256).hexdigest()

    def check_csrf(self, connection: HTTPConnection, candidate: str | None) -> bool:
        """Whether a posted form carries its session's CSRF token."""
        session = self.session_of(connection)
        return (
            session is not None
            and candidate is not None
            and hmac.compare_digest(candidate.encode(), self.csrf_token(session).encode())
        )


class RequireLogin:
    """ASGI middleware: every path but :data:`OPEN_PATHS` needs :meth:`DashboardAuth.authorised`;
    anything else gets 401 with a hint where the login link is."""

    def __init__(self, app: ASGIApp, auth: DashboardAuth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.auth.authorised(HTTPConnection(scope)):
            await self.app(scope, receive, send)
            return
        body = (
            b"Not logged in: open the login link `hermes dashboard` printed "
            b"(or send Authorization: Bearer <token>).\n"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

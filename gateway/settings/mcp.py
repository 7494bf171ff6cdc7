"""``mcp.*``: the Model Context Protocol servers whose tools the agent is offered.

Each server is either a stdio child (``command``, ``args``, ``cwd``, ``env``) or a Streamable
HTTP endpoint (``url``, ``headers``). Secrets never sit in the file: ``env`` names the variables
the child gets from the daemon's environment (or ``.env``), and ``headers`` may hold ``${VAR}``
placeholders filled from the environment when the server is connected.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gateway.settings.sections import Section

SERVER_NAME = re.compile(r"[a-z0-9_]+")
"""A server's name: its tools reach the model as ``<name>__<tool>`` (the API's tool-name rule)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEADER_VARIABLE = re.compile(r"\$\{([^}]*)\}")
"""``${VAR}`` in a header value: filled from the environment, never from the file."""
DEFAULT_CALL_TIMEOUT_SECONDS = 60.0
DEFAULT_STARTUP_TIMEOUT_SECONDS = 30.0
DEFAULT_APPROVAL_TIMEOUT_SECONDS = 600.0


class McpServerSettings(Section):
    """One MCP server: how to reach it and which of its tools are offered to whom."""

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env: list[str] = Field(default_factory=list)
    """Names of environment variables passed to the child (values never logged)."""
    url: str | None = Field(default=None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = (
        DEFAULT_CALL_TIMEOUT_SECONDS
    )
    startup_timeout_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = (
        DEFAULT_STARTUP_TIMEOUT_SECONDS
    )
    """Time to start, shake hands and list the tools; past it the attempt failed."""
    tools: list[str] | None = None
    """The server's tools offered to the model (None: all of them)."""
    ask: list[str] = Field(default_factory=list)
    """Tools that need the user's approval before each call (``["*"]``: all)."""
    users: Literal["all", "admins"] = "all"

    @field_validator("env")
    @classmethod
    def _variable_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return names

    @field_validator("headers")
    @classmethod
    def _header_variables(cls, headers: dict[str, str]) -> dict[str, str]:
        for header, value in headers.items():
            for name in HEADER_VARIABLE.findall(value):
                if not ENV_NAME.fullmatch(name):
                    raise ValueError(f"{header}: ${{{name}}} is not an environment variable name")
        return headers

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (Streamable HTTP)")
        stdio_only = {"args": self.args, "cwd": self.cwd, "env": self.env}
        if self.url is not None and any(stdio_only.values()):
            given = ", ".join(k for k, v in stdio_only.items() if v)
            raise ValueError(f"{given}: only for a stdio server (command), not with url")
        if self.command is not None and self.headers:
            raise ValueError("headers: only for a Streamable HTTP server (url)")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``stdio`` for a child process, ``http`` for a Streamable HTTP endpoint."""
        return "stdio" if self.command is not None else "http"


class McpSettings(Section):
    """The MCP servers, by name, and how long an approval prompt waits."""

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    approval_timeout_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = (
        DEFAULT_APPROVAL_TIMEOUT_SECONDS
    )

    @field_validator("servers", mode="before")
    @classmethod
    def _server_names(cls, servers: object) -> object:
        if isinstance(servers, dict):
            for name in servers:
                if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
                    raise ValueError(f"server name {name!r} must match [a-z0-9_]+")
                if "__" in name:
                    raise ValueError(
                        f"server name {name!r} must not contain '__' "
                        "(it separates the server from the tool in tool names)"
                    )
        return servers


def mcp_secret_env_names(settings: McpSettings) -> set[str]:
    """Every environment variable the servers take values from (``env`` and ``${VAR}`` in
    headers): masked in the log like every configured secret."""
    names: set[str] = set()
    for server in settings.servers.values():
        names.update(server.env)
        for value in server.headers.values():
            names.update(HEADER_VARIABLE.findall(value))
    return names

"""Several ``hermes gateway run`` processes on one PostgreSQL database, for the failover bench
and tests: one config file, each process with its own ``$HERMES_HOME`` and a Telegram token
tagged with its name (so the Telegram emulator tells who sent what); started, found leading,
killed, paused and resumed from here.

Who leads is read where the gateways decide it, the lease row; a member is *serving* once it
leads and polled Telegram after it took the lease.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from gateway.config.schema import parse_config
from gateway.store import leases
from gateway.store.db import async_url
from gateway.store.leases import Lease
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MODEL_KEY_ENV = "HERMES_FAILOVER_MODEL_KEY"
TELEGRAM_TOKEN_ENV = "HERMES_FAILOVER_TELEGRAM_TOKEN"
START_TIMEOUT_SECONDS = 90.0
"""Fresh interpreters importing the SDKs, several at once, on a busy machine."""
STOP_TIMEOUT_SECONDS = 40.0
RECEIVING_METHODS = frozenset({"getUpdates", "setWebhook"})
"""The Bot API calls a leader makes once it receives (polling, or webhook mode)."""
WAIT_STEP_SECONDS = 0.05
"""How often a wait reads the lease row or the emulator's records again (no event tells)."""


def write_config(
    workdir: Path,
    pg_url: str,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    lease_seconds: float,
    telegram_settings: dict[str, Any] | None = None,
    other_platforms: dict[str, Any] | None = None,
) -> Path:
    """The one config every member runs with (failover on, the emulators, ``pg_url``);
    ``telegram_settings`` adds to or overrides ``platforms.telegram``, ``other_platforms``
    adds platforms (``{"discord": {...}}``)."""
    config = parse_config(
        {
            "model": {"base_url": anthropic.base_url, "api_key_env": MODEL_KEY_ENV},
            "database": {"url": pg_url},
            "platforms": {
                "telegram": {
                    "enabled": True,
                    "token_env": TELEGRAM_TOKEN_ENV,
                    "base_url": telegram.base_url,
                    "base_file_url": telegram.base_file_url,
                    "allow_all": True,
                    "poll_timeout": 1,
                    "typing_delay": 0,
                    **(telegram_settings or {}),
                },
                **(other_platforms or {}),
            },
            "gateway": {
                "delivery_backoff_seconds": 0.2,
                "failover": {"enabled": True, "lease_seconds": lease_seconds},
            },
        }
    )
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    return path


@dataclass(eq=False)
class Member:
    """One gateway process of the cluster (restartable)."""

    name: str
    home: Path
    log: Path
    env: dict[str, str]
    process: asyncio.subprocess.Process | None = None
    resumed_at: list[float] = field(default_factory=list)
    """``time.monotonic()`` of each SIGCONT (the fenced-leader check starts there)."""

    @property
    def pid(self) -> int | None:
        """The running process's pid (None when not running)."""
        if self.process is None or self.process.returncode is not None:
            return None
        return self.process.pid


class Cluster:
    """The members, the lease row and the signals."""

    def __init__(
        self,
        workdir: Path,
        config: Path,
        pg_url: str,
        telegram: TelegramEmulator,
        size: int,
        env: dict[str, str] | None = None,
    ) -> None:
        self.config = config
        self.pg_url = pg_url
        self.telegram = telegram
        self._extra_env = env or {}
        self.members = [self._member(workdir, f"g{n}") for n in range(size)]
        self._engine: AsyncEngine | None = None
        self._connection: AsyncConnection | None = None

    def _member(self, workdir: Path, name: str) -> Member:
        home = workdir / name
        home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            MODEL_KEY_ENV: "failover-key",
            TELEGRAM_TOKEN_ENV: self.telegram.tagged_token(name),
            "HERMES_HOME": str(home),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            **self._extra_env,
        }
        return Member(name, home, workdir / f"{name}.log", env)

    async def __aenter__(self) -> Cluster:
        self._engine = create_async_engine(async_url(self.pg_url), poolclass=NullPool)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for member in self.members:
            if member.pid is not None:
                await self.kill(member)
        if self._connection is not None:
            await self._connection.close()
        if self._engine is not None:
            await self._engine.dispose()

    # -- processes ---------------------------------------------------------------------------

    async def start(self, member: Member) -> None:
        """Start ``member`` (it stands by, or leads if the lease is free)."""
        with member.log.open("ab") as log:
            member.process = await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "gateway.cli.main", "gateway", "run", "--config", str(self.config)),
                cwd=PROJECT_ROOT,
                env=member.env,
                stdout=log,
                stderr=log,
            )

    async def kill(self, member: Member) -> None:
        """SIGKILL ``member`` (resumed first if paused, so it can die) and reap it."""
        assert member.process is not None
        member.process.send_signal(signal.SIGKILL)
        member.process.send_signal(signal.SIGCONT)
        await member.process.wait()

    def pause(self, member: Member) -> None:
        """SIGSTOP ``member``: a hung host, as its peers and the database see it."""
        assert member.process is not None
        member.process.send_signal(signal.SIGSTOP)

    def resume(self, member: Member) -> None:
        """SIGCONT ``member`` and note when."""
        assert member.process is not None
        member.resumed_at.append(time.monotonic())
        member.process.send_signal(signal.SIGCONT)

    async def stop(self, member: Member) -> int:
        """SIGTERM ``member``; its exit status."""
        assert member.process is not None
        member.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(member.process.wait(), STOP_TIMEOUT_SECONDS)

    # -- the lease ---------------------------------------------------------------------------

    async def lease(self) -> Lease | None:
        """The lease row as the database holds it now (None also before the members migrated
        the empty database)."""
        assert self._engine is not None
        if self._connection is None or self._connection.closed:
            connection = await self._engine.connect()
            self._connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        try:
            return await leases.read_lease(self._connection)
        except ProgrammingError:  # no lease table yet
            return None

    async def leader(self) -> tuple[Member, Lease] | None:
        """The member holding a live lease now, with the lease (None: nobody leads)."""
        lease = await self.lease()
        if lease is None or not lease.live:
            return None
        for member in self.members:
            if member.pid is not None and member.pid == lease.pid:
                return member, lease
        return None

    async def wait_serving(
        self,
        *,
        after_epoch: int = 0,
        timeout: float = START_TIMEOUT_SECONDS,  # noqa: ASYNC109
    ) -> tuple[Member, Lease]:
        """Wait until a member leads under an epoch past ``after_epoch`` and has polled
        Telegram since it took over; returns it and its lease."""
        async with asyncio.timeout(timeout):
            while True:
                found = await self.leader()
                if found is not None and found[1].epoch > after_epoch:
                    member, lease = found
                    if self._polled_since(member, self._took_over_at(lease)):
                        return member, lease
                await asyncio.sleep(WAIT_STEP_SECONDS)

    def _took_over_at(self, lease: Lease) -> float:
        """The lease's acquisition in this process's monotonic clock (both run on one host
        here, and the database's clock is the host's)."""
        assert lease.acquired_at is not None
        age = time.time() - lease.acquired_at.timestamp()
        return time.monotonic() - max(age, 0.0)

    def _polled_since(self, member: Member, since: float) -> bool:
        """Whether ``member`` polled (or set its webhook, in webhook mode) since ``since``."""
        return any(
            tag == member.name and method in RECEIVING_METHODS and at >= since
            for tag, method, at in self.telegram.callers
        )

    def calls_by(self, member: Member, since: float, until: float = float("inf")) -> list[str]:
        """The Bot API methods ``member`` called between ``since`` and ``until``."""
        return [
            method
            for tag, method, at in self.telegram.callers
            if tag == member.name and since <= at < until
        ]


@asynccontextmanager
async def running_cluster(
    workdir: Path,
    pg_url: str,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    *,
    size: int = 3,
    lease_seconds: float = 2.0,
    telegram_settings: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    other_platforms: dict[str, Any] | None = None,
) -> AsyncIterator[Cluster]:
    """A cluster of ``size`` members on ``pg_url``, started together; killed on the way out.
    ``env`` is added to every member's environment."""
    config = write_config(
        workdir, pg_url, telegram, anthropic, lease_seconds, telegram_settings, other_platforms
    )
    async with Cluster(workdir, config, pg_url, telegram, size, env) as cluster:
        await asyncio.gather(*(cluster.start(member) for member in cluster.members))
        yield cluster


def read_logs(cluster: Cluster) -> dict[str, str]:
    """Each member's log so far, by name."""
    return {
        member.name: member.log.read_text(errors="replace") if member.log.exists() else ""
        for member in cluster.members
    }


@contextmanager
def database_or_throwaway(pg_url: str | None) -> Iterator[str]:
    """``pg_url``, or an empty database on a throwaway server (the tests' own, from Debian's
    PostgreSQL binaries) for as long as the block runs."""
    if pg_url:
        yield pg_url
        return
    from tests.store.pg import postgres_server

    with postgres_server() as server:
        yield asyncio.run(server.create_database("hermes_failover_bench"))

"""A PostgreSQL server for the store tests: a throwaway cluster, or one named by the environment.

With ``HERMES_TEST_PG_URL`` set (``postgresql+asyncpg://user:password@host:port/database``, a
role allowed to ``CREATE DATABASE``) that server is used. Otherwise a cluster is created with
Debian's binaries (``/usr/lib/postgresql/<version>/bin/initdb`` and ``pg_ctl``) in a temporary
directory, on a free loopback port, as the ``postgres`` user when running as root, and removed
afterwards. With neither, the tests fail and say what to install: they are never skipped.
"""

from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

PG_URL_ENV = "HERMES_TEST_PG_URL"
INSTALL_HINT = (
    "The PostgreSQL store tests need a PostgreSQL server: install Debian's 'postgresql' package "
    "(apt-get install -y postgresql, which provides /usr/lib/postgresql/*/bin/initdb and pg_ctl) "
    f"or set {PG_URL_ENV}=postgresql+asyncpg://user:password@host:port/database "
    "(a role allowed to CREATE DATABASE)."
)
BINARY_GLOB = "/usr/lib/postgresql/*/bin/initdb"
SERVER_USER = "postgres"
START_TIMEOUT_S = 60
# A test server needs no durability: skipping fsync makes it start and run much faster.
SERVER_SETTINGS = (
    "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
)


@dataclass(frozen=True)
class PostgresServer:
    """A running server and a database on it that may be used to create test databases."""

    admin_url: str

    @staticmethod
    async def _connect(url: str) -> Any:
        """A connection with the PostgreSQL driver, imported here: only a test that uses a
        server needs the ``postgres`` extra (every other test collects and runs without it)."""
        import asyncpg

        return await asyncpg.connect(PostgresServer._dsn(url))

    async def create_database(self, name: str) -> str:
        """Create an empty database and return its ``postgresql+asyncpg`` URL."""
        connection = await self._connect(self.admin_url)
        try:
            await connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            await connection.close()
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    async def drop_database(self, name: str) -> None:
        """Drop a database made by :meth:`create_database`."""
        connection = await self._connect(self.admin_url)
        try:
            await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await connection.close()

    @staticmethod
    def _dsn(url: str) -> str:
        return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """The server named by ``HERMES_TEST_PG_URL``, else a throwaway local cluster."""
    configured = os.environ.get(PG_URL_ENV)
    if configured:
        yield PostgresServer(admin_url=configured)
        return
    binaries = sorted(glob.glob(BINARY_GLOB))
    if not binaries:
        pytest.fail(INSTALL_HINT, pytrace=False)
    bindir = Path(binaries[-1]).parent  # the newest installed version
    with _throwaway_cluster(bindir) as admin_url:
        yield PostgresServer(admin_url=admin_url)


@contextmanager
def _throwaway_cluster(bindir: Path) -> Iterator[str]:
    workdir = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
    data = workdir / "data"
    run_as = _run_as_server_user(workdir)
    port = _free_port()
    try:
        _run(
            run_as,
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            workdir,
        )
        options = f"-c port={port} -c unix_socket_directories={workdir} {SERVER_SETTINGS}"
        _run(
            run_as,
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(workdir / "server.log"),
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "-o",
                options,
                "start",
            ],
            workdir,
        )
        try:
            yield f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"
        finally:
            _run(
                run_as,
                [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                workdir,
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run_as_server_user(workdir: Path) -> list[str]:
    """The command prefix that runs a program as a user PostgreSQL agrees to run as."""
    if os.geteuid() != 0:
        return []
    try:
        account = pwd.getpwnam(SERVER_USER)
    except KeyError:
        pytest.fail(f"running as root but there is no '{SERVER_USER}' user. {INSTALL_HINT}")
    os.chown(workdir, account.pw_uid, account.pw_gid)
    if shutil.which("runuser"):
        return ["runuser", "-u", SERVER_USER, "--"]
    return ["su", SERVER_USER, "-s", "/bin/sh", "-c"]


def _run(run_as: list[str], command: list[str], workdir: Path) -> None:
    if run_as[:1] == ["su"]:
        command = [shlex.join(command)]  # su takes one shell command line
    completed = subprocess.run(
        [*run_as, *command], capture_output=True, text=True, check=False, cwd=workdir
    )
    if completed.returncode != 0:
        log = workdir / "server.log"
        server_log = log.read_text(errors="replace") if log.exists() else ""
        pytest.fail(
            f"{shlex.join(command)} failed ({completed.returncode}):\n"
            f"{completed.stdout}{completed.stderr}{server_log}",
            pytrace=False,
        )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

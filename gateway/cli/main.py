"""The ``hermes`` command line: chat, gateway, demo, sessions, plugins, db, config, doctor,
backup, restore, health, users, usage, dashboard."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.config.schema import Config
    from gateway.runtime.daemon import Beside
    from gateway.store.records import SessionSummary
    from gateway.store.repository import Repository

# Everything else is imported where a command needs it: `hermes --help` imports nothing heavy
# (tests/integration/test_startup_imports.py keeps it that way).

EXIT_CONFIG_ERROR = 2
EXIT_BROKEN_PIPE = 141
"""What a shell reports for a command whose reader went away (128 + SIGPIPE)."""
DISTRIBUTION = "hermes-gateway"
SESSION_LIST_LIMIT = 1000
"""How many sessions `hermes sessions list` shows, most recently updated first."""


class _VersionAction(argparse.Action):
    """``--version``: the installed distribution's version, read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version(DISTRIBUTION)
        except PackageNotFoundError:  # run from a checkout that was never installed
            found = "unknown (not installed)"
        print(f"hermes {found}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes",
        description="Hermes Gateway: chat with Claude from Telegram, Discord and the terminal.",
    )
    parser.add_argument("--version", action=_VersionAction)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config", metavar="PATH", help="configuration file (default: $HERMES_HOME/config.yaml)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    chat = sub.add_parser(
        "chat", parents=[common], help="chat in the terminal (scriptable on stdin)"
    )
    chat.add_argument("--session", default="local", help="session name (default: local)")

    gateway = sub.add_parser("gateway", parents=[common], help="the Telegram/Discord daemon")
    gateway.add_argument("action", choices=["run"])

    demo = sub.add_parser("demo", parents=[common], help="offline demo against local emulators")
    demo.add_argument("--turns", type=int, default=None, help="number of scripted turns")

    sessions = sub.add_parser(
        "sessions", parents=[common], help="list, show, export or cost stored sessions"
    )
    sessions.add_argument("action", choices=["list", "show", "export", "usage"])
    sessions.add_argument("session_id", nargs="?", type=int)
    sessions.add_argument("--all", action="store_true", help="export: every session")
    sessions.add_argument(
        "--output", "-o", metavar="FILE", help="export: write JSONL here (default: stdout)"
    )

    plugins = sub.add_parser(
        "plugins", parents=[common], help="context engines found and the active one"
    )
    plugins.add_argument("action", choices=["list"])

    db = sub.add_parser("db", parents=[common], help="database schema")
    db.add_argument("action", choices=["upgrade"])

    config = sub.add_parser("config", parents=[common], help="validate and print the configuration")
    config.add_argument("action", choices=["check"])

    sub.add_parser(
        "doctor", parents=[common], help="check configuration, secrets, database and model"
    )
    backup = sub.add_parser(
        "backup", parents=[common], help="copy the SQLite database (safe while the daemon runs)"
    )
    backup.add_argument("path", help="the backup file to create")
    restore = sub.add_parser(
        "restore", parents=[common], help="replace the database with a backup (daemon stopped)"
    )
    restore.add_argument("path", help="a file made by `hermes backup`")
    sub.add_parser(
        "health", parents=[common], help="exit 0 when a gateway runs for this HERMES_HOME"
    )
    users = sub.add_parser("users", parents=[common], help="list, allow or deny users")
    users.add_argument("action", choices=["list", "allow", "deny"])
    users.add_argument("user", nargs="?", help="a user id or @username (allow, deny)")
    users.add_argument("--platform", default="telegram", help="default: telegram")
    mcp = sub.add_parser("mcp", parents=[common], help="MCP servers: state, tools, last error")
    mcp.add_argument("action", choices=["list"])
    usage = sub.add_parser(
        "usage", parents=[common], help="cost per user, day or model; tool calls per tool"
    )
    usage.add_argument("--by", choices=["user", "day", "model"], default="user")
    usage.add_argument("--days", type=int, default=30, help="the last N UTC days (default 30)")
    dashboard = sub.add_parser(
        "dashboard", parents=[common], help="web pages and /metrics over the stored data"
    )
    dashboard.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (loopback)")
    dashboard.add_argument("--port", type=int, default=8787, help="default: 8787")
    dashboard.add_argument(
        "--allow-remote", action="store_true", help="allow a --host that is not loopback"
    )
    dashboard.add_argument(
        "--home", metavar="DIR", help="the data directory to show (default: $HERMES_HOME)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hermes`` console script.

    Safe to pipe: when the reader goes away early (``hermes sessions list | head``) the command
    stops quietly with status 141, as a shell tool killed by SIGPIPE does, without a traceback.
    """
    try:
        code = _run(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # Whatever is still buffered can never be written; point stdout at nothing so the
        # interpreter's own flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _run(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "home", None):
        os.environ["HERMES_HOME"] = args.home  # before the configuration is looked for there
    from gateway.config.schema import ConfigError, load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"hermes: config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    quick = _sessions_quick(config, args) if args.command == "sessions" else None
    if quick is not None:
        return quick
    from gateway.runtime import event_loop

    handler = _HANDLERS[args.command]
    try:
        return event_loop.run(handler(config, args), config.gateway.event_loop)
    except ConfigError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except KeyboardInterrupt:
        return 130


async def _chat(config: Config, args: argparse.Namespace) -> int:
    from gateway.cli.chat import run_chat
    from gateway.runtime.app import configure_logging, open_app

    configure_logging(config)
    async with open_app(config, with_tools=True) as app:
        return await run_chat(app, args.session)


def served_beside_the_gateway(config: Config) -> list[Beside]:
    """What ``hermes gateway run`` serves beside the gateway: the dashboard when enabled (the
    runtime sits below the dashboard, so the wiring is here)."""
    if not config.dashboard.enabled:
        return []
    from gateway.dashboard.daemon import dashboard_beside

    return [dashboard_beside(config)]


async def _gateway(config: Config, args: argparse.Namespace) -> int:
    from gateway.runtime.daemon import run_gateway

    return await run_gateway(config, served_beside_the_gateway(config))


async def _demo(config: Config, args: argparse.Namespace) -> int:
    from gateway.cli.demo import run_demo

    return await run_demo(turns=args.turns)


def _sessions_quick(config: Config, args: argparse.Namespace) -> int | None:
    """``sessions list`` of an up-to-date SQLite file, read without SQLAlchemy or an event
    loop (a third of the time); None when the database needs the usual way."""
    if args.action != "list":
        return None
    from gateway.config.schema import database_url
    from gateway.store.sqlite_listing import quick_session_list

    listed = quick_session_list(database_url(config), SESSION_LIST_LIMIT)
    if listed is None:
        return None
    _print_sessions(listed)
    return 0


def _print_sessions(sessions: Iterable[SessionSummary]) -> None:
    for s in sessions:
        flag = "*" if s.active else " "
        updated = f"{s.updated_at:%Y-%m-%d %H:%M}"
        print(f"{flag} #{s.id:<5} {s.key:<32} {s.message_count:>6} msgs  updated {updated}")


async def _sessions(config: Config, args: argparse.Namespace) -> int:
    from gateway.config.schema import database_url
    from gateway.store.db import open_store
    from gateway.store.repository import Repository

    store = await open_store(database_url(config))
    try:
        repo = Repository(store)
        if args.action == "list":
            _print_sessions(await repo.list_sessions(limit=SESSION_LIST_LIMIT))
            return 0
        if args.action == "export" and args.all:
            ids = [summary.id for summary in await repo.list_sessions(limit=None)]
            return await _export(repo, ids, args.output)
        if args.session_id is None:
            print(f"hermes: sessions {args.action} needs a session id (or --all)", file=sys.stderr)
            return EXIT_CONFIG_ERROR
        if await repo.get_session(args.session_id) is None:
            print(f"hermes: no session #{args.session_id}", file=sys.stderr)
            return 1
        if args.action == "show":
            for m in await repo.all_messages(args.session_id):
                mark = "ctx" if m.in_context else "   "
                content = (
                    m.content
                    if isinstance(m.content, str)
                    else json.dumps(m.content, ensure_ascii=False)
                )
                print(f"[{m.id}] {mark} {m.role:<9} {(content or '')[:200]}")
            return 0
        if args.action == "usage":
            from gateway.config.prices import chat_model_info
            from gateway.reports.usage import usage_report

            print(
                await usage_report(
                    repo, args.session_id, chat_model_info(config, config.model.name)
                )
            )
            return 0
        return await _export(repo, [args.session_id], args.output)
    finally:
        await store.close()


async def _export(repo: Repository, session_ids: list[int], output: str | None) -> int:
    """JSONL of every stored message and compaction of each session, each row naming it."""
    # A CLI command: blocking file writes are fine here.
    out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: ASYNC230
    try:
        for session_id in session_ids:
            async for row in repo.export_session(session_id):
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


async def _backup(config: Config, args: argparse.Namespace) -> int:
    from pathlib import Path

    from gateway.cli.backup import BackupError, backup_sqlite
    from gateway.config.schema import database_url, mask_url
    from gateway.store.locations import sqlite_path

    url = database_url(config)
    database = sqlite_path(url)
    if database is None:
        print(
            f"hermes: {mask_url(url)} is not a SQLite file; back PostgreSQL up with its own tool:"
            f" pg_dump --format=custom --file {args.path} <database>",
            file=sys.stderr,
        )
        return EXIT_CONFIG_ERROR
    try:
        report = backup_sqlite(database, Path(args.path))
    except BackupError as exc:
        print(f"hermes: backup failed: {exc}", file=sys.stderr)
        return 1
    print(
        f"backup {report.path}: {report.sessions} sessions, {report.messages} messages, "
        f"{report.size_bytes:,} bytes, integrity ok"
    )
    return 0


async def _restore(config: Config, args: argparse.Namespace) -> int:
    from pathlib import Path

    from gateway.cli.backup import BackupError, restore_sqlite
    from gateway.config.schema import database_url, hermes_home
    from gateway.runtime.daemon_lock import running_daemon
    from gateway.store.locations import sqlite_path

    database = sqlite_path(database_url(config))
    if database is None:
        print("hermes: restore a PostgreSQL dump with pg_restore", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    pid = running_daemon(hermes_home())
    if pid is not None:
        print(f"hermes: the gateway is running (pid {pid}); stop it first", file=sys.stderr)
        return 1
    try:
        kept = restore_sqlite(Path(args.path), database)
    except BackupError as exc:
        print(f"hermes: restore refused: {exc}", file=sys.stderr)
        return 1
    print(f"restored {database} from {args.path}")
    if kept is not None:
        print(f"the database it replaced is kept as {kept}")
    return 0


async def _health(config: Config, args: argparse.Namespace) -> int:
    from gateway.config.schema import hermes_home
    from gateway.runtime.daemon_lock import running_daemon

    pid = running_daemon(hermes_home())
    if pid is None:
        print("no gateway is running")
        return 1
    print(f"gateway running (pid {pid})")
    return 0


async def _plugins(config: Config, args: argparse.Namespace) -> int:
    from agent.engine_loader import discover_engines
    from gateway.config.schema import hermes_home
    from gateway.sessions.services import PROJECT_ROOT

    active = config.context.engine
    engines = discover_engines(PROJECT_ROOT, hermes_home())
    names = {e.name for e in engines}
    for info in engines:
        mark = "*" if info.name == active else " "
        where = f" ({info.path})" if info.path else ""
        print(f"{mark} {info.name:<16} {info.source}{where}")
    if active not in names:
        print(f"! context.engine '{active}' was not found; the built-in compressor will be used")
    return 0


async def _db(config: Config, args: argparse.Namespace) -> int:
    from gateway.config.schema import database_url, mask_url
    from gateway.store.db import upgrade_database

    url = database_url(config)
    head = await upgrade_database(url)
    print(f"database {mask_url(url)} is at revision {head}")
    return 0


async def _config(config: Config, args: argparse.Namespace) -> int:
    import yaml

    from gateway.config.masking import masked_config
    from gateway.config.secrets import install_log_sanitizer

    # Masked by key and by shape first; then any configured secret's value still showing
    # (an environment value pasted somewhere unmarked) is masked by the log sanitizer.
    shown = masked_config(config, redact=install_log_sanitizer(config).redact)
    print(f"# configuration OK ({config.source})")
    print(yaml.safe_dump(shown, sort_keys=False, allow_unicode=True), end="")
    return 0


async def _doctor(config: Config, args: argparse.Namespace) -> int:
    from gateway.cli.doctor import run_doctor

    return await run_doctor(config)


async def _users(config: Config, args: argparse.Namespace) -> int:
    from gateway.cli.users import users_command

    return await users_command(config, args)


async def _usage(config: Config, args: argparse.Namespace) -> int:
    from gateway.cli.users import usage_command

    return await usage_command(config, args)


async def _dashboard(config: Config, args: argparse.Namespace) -> int:
    from gateway.dashboard.server import serve_dashboard
    from gateway.runtime.app import configure_logging

    configure_logging(config)
    return await serve_dashboard(config, args.host, args.port, allow_remote=args.allow_remote)


async def _mcp(config: Config, args: argparse.Namespace) -> int:
    from gateway.cli.mcp import run_mcp_list

    return await run_mcp_list(config)


_HANDLERS: dict[str, Callable[[Config, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "chat": _chat,
    "gateway": _gateway,
    "demo": _demo,
    "sessions": _sessions,
    "plugins": _plugins,
    "db": _db,
    "config": _config,
    "doctor": _doctor,
    "backup": _backup,
    "restore": _restore,
    "health": _health,
    "users": _users,
    "usage": _usage,
    "dashboard": _dashboard,
    "mcp": _mcp,
}

if __name__ == "__main__":
    raise SystemExit(main())

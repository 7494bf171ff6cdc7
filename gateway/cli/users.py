"""``hermes users list|allow|deny`` and ``hermes usage``: operating the bot for friends.

``allow``/``deny`` store the same run-time decisions as the admins' ``/allow`` and ``/deny``
(a running daemon applies them within seconds); ``list`` shows them beside the configured
allowlists and admins. ``usage`` sums the recorded cost per user, day or model, then the tool
calls per tool (per user and tool with ``--by user``).
"""

from __future__ import annotations

import argparse

from gateway.commands.users import parse_user
from gateway.config.schema import Config, database_url
from gateway.platforms.registry import PLATFORMS
from gateway.reports.tool_calls import tool_calls_table
from gateway.store.db import open_store
from gateway.store.repository import Repository
from gateway.users.access import usage_window

EXIT_USAGE = 2


async def users_command(config: Config, args: argparse.Namespace) -> int:
    platforms = PLATFORMS.sections(config)
    if args.platform not in platforms:
        print(f"hermes: --platform must be one of {', '.join(platforms)}", flush=True)
        return EXIT_USAGE
    store = await open_store(database_url(config))
    try:
        repo = Repository(store)
        if args.action == "list":
            for name, section in platforms.items():
                everyone = " (allow_all)" if section.allow_all else ""
                print(f"{name}: allowed_users {list(section.allowed_users)}{everyone}")
                print(f"{name}: admin_users {list(section.admin_users)}")
            for record in await repo.access_records():
                who = f"@{record.username}" if record.username else record.user_id
                print(
                    f"{record.platform}: {record.access} {who} "
                    f"(by {record.set_by}, {record.updated_at:%Y-%m-%d %H:%M} UTC)"
                )
            return 0
        parsed = parse_user(args.user or "")
        if parsed is None:
            print("hermes: users allow/deny takes a user id or @username", flush=True)
            return EXIT_USAGE
        user_id, username = parsed
        await repo.set_access(
            args.platform, user_id=user_id, username=username, access=args.action, set_by="cli"
        )
        print(f"{args.action} {args.user} on {args.platform}")
        return 0
    finally:
        await store.close()


async def usage_command(config: Config, args: argparse.Namespace) -> int:
    since = usage_window(args.days)
    store = await open_store(database_url(config))
    try:
        repo = Repository(store)
        rows = await repo.usage_by(args.by, since)
        tool_calls = await repo.tool_call_stats(since, per_user=args.by == "user")
        stops = await repo.turn_stops_since(since)
        speech = await repo.speech_totals(since)
    finally:
        await store.close()
    print(f"{args.by:<28} {'calls':>7} {'input':>11} {'cached':>11} {'output':>9}  hit   cost")
    for row in rows:
        print(
            f"{row.group:<28} {row.calls:>7} {row.input_tokens:>11,} "
            f"{row.cache_read_tokens + row.cache_write_tokens:>11,} {row.output_tokens:>9,} "
            f"{row.cache_hit_rate:>4.0%}  ${row.cost_usd:.4f}"
        )
    print(f"total: ${sum(row.cost_usd for row in rows):.4f} over the last {args.days} day(s)")
    print()
    per = "user and tool" if args.by == "user" else "tool"
    print(f"tool calls per {per} (run time in seconds; refused: approval not given)")
    for line in tool_calls_table(tool_calls):
        print(line)
    calls = sum(s.calls for s in tool_calls)
    print(f"total: {calls} tool call(s) over the last {args.days} day(s)")
    print(
        f"turns stopped at the step limit (agent.max_iterations: "
        f"{config.agent.max_iterations}): {stops}"
    )
    print()
    print(f"{'voice replies per provider':<28} {'answers':>7} {'characters':>11}  cost")
    for total in speech:
        print(f"{total.provider:<28} {total.answers:>7} {total.chars:>11,}  ${total.cost_usd:.4f}")
    spoken = sum(total.cost_usd for total in speech)
    print(f"total: ${spoken:.4f} spoken over the last {args.days} day(s)")
    return 0

"""``/allow``, ``/deny`` (admins) and the per-user part of ``/usage``.

``/allow 123`` or ``/allow @name`` lets a user talk to the bot on this platform from their next
message; ``/deny`` stops them at their next message. Decisions are stored (``user_access``) and
override ``allowed_users`` from the config; admins are always allowed. ``hermes users`` does
the same from the shell.
"""

from __future__ import annotations

from gateway.commands.registry import CommandContext, CommandSpec
from gateway.commands.voice import speech_usage_lines
from gateway.reports.tool_calls import tool_calls_text
from gateway.store.repository_users import Access, SpendRow
from gateway.users.access import day_start, month_start
from gateway.users.allowlist import UserEntry

USAGE_TEXT = "Usage: /{name} USER_ID or /{name} @username"
DONE_TEXT = {
    "allow": "Allowed {who} on {platform}: they can write to the bot now.",
    "deny": "Denied {who} on {platform}: their next message is refused.",
}


def parse_user(argument: str) -> tuple[str | None, str | None] | None:
    """``123`` -> (id, None); ``@name`` -> (None, name); anything else None (a bare word, which
    the config reads as a username, is refused here: a typo should not allow a stranger)."""
    text = argument.strip()
    entry = UserEntry.parse(text)
    if entry is None or " " in text or (entry.username and not text.startswith("@")):
        return None
    return entry.user_id, entry.username


async def _set(ctx: CommandContext, access: Access) -> str:
    parsed = parse_user(ctx.argument)
    if parsed is None:
        return USAGE_TEXT.format(name=access)
    user_id, username = parsed
    platform = ctx.address.platform
    await ctx.sessions.services.repo.set_access(
        platform,
        user_id=user_id,
        username=username,
        access=access,
        set_by=ctx.address.user_key or platform,
    )
    await ctx.host.access_changed()
    who = f"@{username}" if username else f"user {user_id}"
    return DONE_TEXT[access].format(who=who, platform=platform)


async def allow_command(ctx: CommandContext) -> str:
    """``/allow <id|@name>``."""
    return await _set(ctx, "allow")


async def deny_command(ctx: CommandContext) -> str:
    """``/deny <id|@name>``."""
    return await _set(ctx, "deny")


def spend_line(label: str, row: SpendRow | None) -> str:
    """``today: $0.42, 12 calls, 31,000 tokens, 84% from cache``."""
    if row is None:
        return f"{label}: nothing yet"
    tokens = row.input_tokens + row.cache_read_tokens + row.cache_write_tokens + row.output_tokens
    return (
        f"{label}: ${row.cost_usd:.2f}, {row.calls} calls, {tokens:,} tokens, "
        f"{row.cache_hit_rate:.0%} from cache"
    )


async def my_usage_text(ctx: CommandContext) -> str:
    """The caller's own spend and tool calls today and this month (every chat of theirs)."""
    repo = ctx.sessions.services.repo
    key = ctx.address.user_key
    if key is None:
        return ""
    today = await repo.usage_by("user", day_start(), key)
    month = await repo.usage_by("user", month_start(), key)
    spend = "\n".join(
        [
            "You (every chat):",
            spend_line("  today (UTC)", today[0] if today else None),
            spend_line("  this month", month[0] if month else None),
        ]
    )
    tools = tool_calls_text(
        "Your tool calls:",
        [
            ("today (UTC)", await repo.tool_call_stats(day_start(), key)),
            ("this month", await repo.tool_call_stats(month_start(), key)),
        ],
    )
    periods = [("today (UTC)", day_start()), ("this month", month_start())]
    voice = await speech_usage_lines(repo, periods, key)
    stops = await step_limit_text(ctx, key)
    return "\n".join([spend, tools, *voice, *([stops] if stops else [])])


async def step_limit_text(ctx: CommandContext, key: str | None) -> str:
    """How many turns (of ``key``, or everyone's) stopped at the step limit today and this
    month; empty when none did this month."""
    repo = ctx.sessions.services.repo
    month = await repo.turn_stops_since(month_start(), key)
    if not month:
        return ""
    today = await repo.turn_stops_since(day_start(), key)
    limit = ctx.sessions.services.config.agent.max_iterations
    return (
        f"Stopped at the step limit ({limit} steps, agent.max_iterations): "
        f"{today} today (UTC), {month} this month"
    )


async def everyones_usage_text(ctx: CommandContext) -> str:
    """``/usage all`` (admins): this month per user, and everyone's tool calls."""
    repo = ctx.sessions.services.repo
    rows = await repo.usage_by("user", month_start())
    if not rows:
        return "This month: no usage yet."
    lines = ["This month, per user:"]
    lines += [spend_line(f"  {row.group}", row) for row in rows]
    total = sum(row.cost_usd for row in rows)
    lines.append(f"  total: ${total:.2f}")
    tools = tool_calls_text(
        "Everyone's tool calls:",
        [
            ("today (UTC)", await repo.tool_call_stats(day_start())),
            ("this month", await repo.tool_call_stats(month_start())),
        ],
    )
    voice = await speech_usage_lines(repo, [("this month", month_start())], None)
    stops = await step_limit_text(ctx, None)
    return "\n".join([*lines, tools, *voice, *([stops] if stops else [])])


USER_COMMANDS = (
    CommandSpec(
        "allow", "Let a user talk to the bot", allow_command, "ID|@name", permission="admin"
    ),
    CommandSpec(
        "deny", "Stop a user talking to the bot", deny_command, "ID|@name", permission="admin"
    ),
)

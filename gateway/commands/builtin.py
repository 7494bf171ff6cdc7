"""The built-in commands: /new, /stop, /compress, /usage, /status, /model, /help (/start)."""

from __future__ import annotations

from agent.prompt_caching import caching_status_line
from gateway.commands.forget import FORGET_COMMAND
from gateway.commands.jobs import JOBS_COMMAND, TZ_COMMAND
from gateway.commands.memory import MEMORY_COMMAND
from gateway.commands.model import MODEL_COMMAND
from gateway.commands.registry import CommandContext, CommandSpec
from gateway.commands.tools import TOOLS_COMMAND
from gateway.commands.users import USER_COMMANDS, everyones_usage_text, my_usage_text
from gateway.commands.voice import VOICE_COMMAND
from gateway.reports.totals import status_text
from gateway.reports.usage import usage_report
from gateway.sessions.compaction_notice import last_compaction_line
from gateway.sessions.mcp_servers import servers_line

STOPPED_TEXT = "Stopped. The answer in progress was cancelled."
NOTHING_RUNNING_TEXT = "Nothing is running."


async def help_command(ctx: CommandContext) -> str:
    """``/help``: the commands the caller may use."""
    return ctx.registry.help_text(admin=ctx.is_admin)


async def new_command(ctx: CommandContext) -> str:
    """``/new``: a fresh session for the chat; the old one stays stored."""
    runtime = await ctx.sessions.new_session(ctx.address)
    return f"Started a new session (#{runtime.session_id}). The previous one stays stored."


async def stop_command(ctx: CommandContext) -> str:
    """``/stop``: cancel the answer in progress (the host knows what is running)."""
    stopped = await ctx.host.stop_running(ctx.address.key)
    return STOPPED_TEXT if stopped else NOTHING_RUNNING_TEXT


async def compress_command(ctx: CommandContext) -> str:
    """``/compress [focus]``: compact now, the summary focused on ``focus`` when given."""
    runtime = await ctx.sessions.get(ctx.address)
    result = await runtime.agent.compress(ctx.argument or None)
    if result.outcome == "skipped":
        return f"Nothing to compact ({result.detail or 'the context is already small'})."
    text = (
        f"Compacted: {result.tokens_before:,} -> {result.tokens_after:,} tokens ({result.outcome})."
    )
    if result.user_notice:
        text += "\n" + result.user_notice
    return text


async def usage_command(ctx: CommandContext) -> str:
    """``/usage``: the session's tokens, cache hit rate, cost and where the money went, then
    the caller's own spend; ``/usage all`` (admins): this month per user."""
    if ctx.argument.strip().lower() == "all":
        if not ctx.is_admin:
            return "/usage all is for the bot's admins only."
        return await everyones_usage_text(ctx)
    runtime = await ctx.sessions.get(ctx.address)
    services = ctx.sessions.services
    report = await usage_report(services.repo, runtime.session_id, runtime.model.info)
    mine = await my_usage_text(ctx)
    return f"{report}\n\n{mine}" if mine else report


async def status_command(ctx: CommandContext) -> str:
    """``/status``: the session's context and engine; for an admin also the daemon's health."""
    runtime = await ctx.sessions.get(ctx.address)
    services = ctx.sessions.services
    repo = services.repo
    compactions = await repo.list_compactions(runtime.session_id)
    agent = runtime.agent.status()
    text = status_text(
        session_id=runtime.session_id,
        key=runtime.record.key,
        model=runtime.model.name,
        in_context=agent.in_context,
        stored=await repo.count_messages(runtime.session_id),
        prompt_tokens=agent.prompt_tokens,
        context_length=runtime.model.context_length,
        engine_status=agent.engine_status,
        compactions=len(compactions),
        last_compaction=last_compaction_line(compactions[-1] if compactions else None),
        caching_line=caching_status_line(runtime.model.cache_policy, agent.cache_ttl),
        summary_line=services.summary_line,
    )
    if services.tool_providers:
        text += "\n" + servers_line(services.tool_providers, with_cause=ctx.is_admin)
    health = await ctx.host.health_text() if ctx.is_admin else ""
    return f"{text}\n{health}" if health else text


BUILTIN_COMMANDS = (
    CommandSpec("new", "Start a fresh session (the current one stays stored)", new_command),
    CommandSpec("stop", "Stop the answer in progress", stop_command, immediate=True),
    CommandSpec(
        "compress",
        "Compact the conversation now, the summary focused on a topic if given",
        compress_command,
        arguments="[focus]",
    ),
    CommandSpec(
        "usage",
        "Tokens, cache hit rate and cost of this session and of you",
        usage_command,
        arguments="[all]",
    ),
    CommandSpec("status", "Session, model, context size and the last compaction", status_command),
    MODEL_COMMAND,
    *USER_COMMANDS,
    MEMORY_COMMAND,
    JOBS_COMMAND,
    TZ_COMMAND,
    TOOLS_COMMAND,
    FORGET_COMMAND,
    VOICE_COMMAND,
    CommandSpec("help", "List the commands", help_command, aliases=("start",)),
)
"""In the order ``/help`` and the menus list them."""

"""``/model [name]``: the models this chat may use, and switching the chat's model.

The choices are ``model.name`` and ``model.choices`` from the configuration (same provider,
endpoint and key), so the operator decides what a chat may cost. The choice is stored with
the session (``sessions.model``) and survives a restart; the session is then loaded again so
its context engine, hygiene and cost policy work against the new model's window, and its
requests, prompt caching and recorded prices are the new model's. ``/new`` starts over on the
configured default.
"""

from __future__ import annotations

from agent.model_table import ModelInfo
from gateway.commands.registry import CommandContext, CommandSpec
from gateway.sessions.model_choice import UnknownModelError

SWITCHED_TEXT = (
    "Switched this chat to {name} ({window} context). The conversation goes on; the first "
    "answer re-reads it into the new model's prompt cache."
)
SAME_TEXT = "This chat already uses {name}."


def _window(info: ModelInfo) -> str:
    tokens = info.context_length
    return f"{tokens // 1_000_000}M" if tokens % 1_000_000 == 0 else f"{round(tokens / 1000)}K"


def _price(info: ModelInfo) -> str:
    if not info.known:
        return "price unknown"
    return f"${info.input_per_mtok:g} in / ${info.output_per_mtok:g} out per MTok"


def model_list(names: list[str], current: str, infos: dict[str, ModelInfo]) -> str:
    """One line per configured model: window and prices, the chat's own marked."""
    lines = ["Models (/model NAME to switch):"]
    for name in names:
        info = infos[name]
        mark = " (this chat)" if name == current else ""
        lines.append(f"{name}{mark}: {_window(info)} context, {_price(info)}")
    return "\n".join(lines)


async def model_command(ctx: CommandContext) -> str:
    """``/model``: list the models; ``/model NAME``: switch this chat to NAME."""
    models = ctx.sessions.services.models
    runtime = await ctx.sessions.get(ctx.address)
    if not ctx.argument:
        infos = {name: models.info(name) for name in models.names}
        return model_list(models.names, runtime.model.name, infos)
    try:
        name = models.resolve(ctx.argument)
    except UnknownModelError as exc:
        return str(exc)
    if name == runtime.model.name:
        return SAME_TEXT.format(name=name)
    stored = None if name == models.default_name else name
    await ctx.sessions.services.repo.update_session(runtime.session_id, model=stored)
    switched = await ctx.sessions.reopen(ctx.address)
    return SWITCHED_TEXT.format(name=name, window=_window(switched.model.info))


MODEL_COMMAND = CommandSpec(
    "model",
    "List the models or switch this chat's model",
    model_command,
    arguments="[name]",
)

"""``/voice off | on | auto``: whether this chat's answers are also spoken.

``auto`` answers a voice note with a voice reply and text with text; ``on`` speaks every
answer; ``off`` never. The mode is stored per chat (it survives restarts); a chat that never
chose uses ``tts.voice``. Without a configured provider (``tts.provider: null``) the command
says so and changes nothing. Also here: the spoken characters and their cost for ``/usage``.
"""

from __future__ import annotations

from datetime import datetime

from gateway.commands.registry import CommandContext, CommandSpec
from gateway.settings.tts import VOICE_MODES, VoiceMode
from gateway.store.ports import VoiceStore

NO_PROVIDER_TEXT = "Voice replies are not set up on this bot (tts.provider in its config)."
MODE_TEXT = {
    "off": "Voice replies are off in this chat: answers come as text.",
    "on": "Voice replies are on in this chat: every answer is spoken, and its text sent too.",
    "auto": "Voice replies are automatic in this chat: a voice note is answered by voice "
    "(and its text), a text with text.",
}
USAGE_TEXT = "Use /voice off, /voice on or /voice auto."


def _mode(argument: str) -> VoiceMode | None:
    wanted = argument.strip().lower()
    for mode in VOICE_MODES:
        if wanted == mode:
            return mode
    return None


async def voice_command(ctx: CommandContext) -> str:
    """``/voice``: the chat's mode; ``/voice off|on|auto``: change it."""
    settings = ctx.sessions.services.config.tts
    if settings.provider is None:
        return NO_PROVIDER_TEXT
    repo: VoiceStore = ctx.sessions.services.repo
    address = ctx.address
    if not ctx.argument.strip():
        stored = await repo.voice_mode(address.platform, address.chat_id)
        current = _mode(stored or "") or settings.voice
        return f"{MODE_TEXT[current]}\n{USAGE_TEXT}"
    mode = _mode(ctx.argument)
    if mode is None:
        return USAGE_TEXT
    await repo.set_voice_mode(address.platform, address.chat_id, mode)
    return MODE_TEXT[mode]


async def speech_usage_lines(
    repo: VoiceStore, periods: list[tuple[str, datetime]], user_key: str | None
) -> list[str]:
    """``Voice replies:`` and one line per period and provider (characters spoken, cost);
    nothing when no answer was spoken."""
    lines: list[str] = []
    for label, since in periods:
        for total in await repo.speech_totals(since, user_key):
            lines.append(
                f"  {label}, {total.provider}: {total.answers} answers, "
                f"{total.chars:,} characters spoken, ${total.cost_usd:.4f}"
            )
    return ["Voice replies:", *lines] if lines else []


VOICE_COMMAND = CommandSpec(
    "voice",
    "Spoken answers in this chat: off, on, or auto (a voice note gets a voice reply)",
    voice_command,
    arguments="[off|on|auto]",
)

"""Voice messages on Telegram: ``sendVoice`` with OGG/Opus, shown as a voice bubble.

The caption is the answer's text when it fits (:data:`TELEGRAM_CAPTION_LIMIT` UTF-16 units
after formatting), formatted like a message and sent plain when Telegram rejects the
formatting.
"""

from __future__ import annotations

import logging
import math

from telegram import Bot, InputFile
from telegram.error import BadRequest

from gateway.platforms.base import DeliveryTarget, VoiceNote
from gateway.text.markdown import TELEGRAM_PARSE_MODE, markdown_to_telegram

log = logging.getLogger(__name__)

TELEGRAM_CAPTION_LIMIT = 1024
"""The longest caption Telegram takes (UTF-16 code units, after entities are parsed)."""
VOICE_FILE_NAME = "voice.ogg"
FORMATTING_ERRORS = ("can't parse entities", "caption is too long")


async def send_telegram_voice(
    bot: Bot, target: DeliveryTarget, voice: VoiceNote, caption: str
) -> str:
    """Send ``voice`` (with ``caption``, possibly empty) to ``target``; returns its message id.

    Raises python-telegram-bot's errors (the adapter classifies them)."""
    extra: dict[str, object] = {"duration": max(1, math.ceil(voice.duration))}
    if target.thread_id:
        extra["message_thread_id"] = int(target.thread_id)
    audio = InputFile(voice.ogg, filename=VOICE_FILE_NAME)
    if not caption:
        sent = await bot.send_voice(int(target.chat_id), audio, **extra)  # type: ignore[arg-type]
        return str(sent.message_id)
    try:
        sent = await bot.send_voice(
            int(target.chat_id),
            audio,
            caption=markdown_to_telegram(caption),
            parse_mode=TELEGRAM_PARSE_MODE,
            **extra,  # type: ignore[arg-type]
        )
    except BadRequest as exc:
        if not any(reason in str(exc).lower() for reason in FORMATTING_ERRORS):
            raise
        log.warning("telegram: caption formatting rejected (%s); sending it plain", exc)
        audio = InputFile(voice.ogg, filename=VOICE_FILE_NAME)
        sent = await bot.send_voice(int(target.chat_id), audio, caption=caption, **extra)  # type: ignore[arg-type]
    return str(sent.message_id)

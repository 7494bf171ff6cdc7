"""``sendVoice`` as Telegram takes it: a multipart upload of OGG/Opus audio, shown as a voice
bubble with its duration, with an optional caption (at most 1,024 characters after parsing).

The upload is decoded (:func:`sandbox.voice_audio.check_voice_upload`); anything that is not
OGG with an Opus stream, or a call without ``duration``, is refused with a 400, so a gateway that
would show a file instead of a bubble fails its tests. Every voice message the bot sent is kept
with its bytes and what the decoder found (:attr:`VoiceMessages.sent`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.telegram_chats import ApiObject, ChatDirectory
from sandbox.telegram_faults import FloodControl
from sandbox.telegram_markup import MarkupError, UnsupportedParseMode, format_message_text
from sandbox.telegram_text import utf16_len
from sandbox.telegram_wire import Params, UploadedFile, bad_request
from sandbox.voice_audio import NotVoice, VoiceUpload, check_voice_upload

MAX_CAPTION_UTF16 = 1024


@dataclass(frozen=True, slots=True)
class SentVoice:
    """One voice message the bot sent: where, its audio, what a decoder found, its caption."""

    chat_id: int
    message_id: int
    duration: int
    audio: bytes
    decoded: VoiceUpload
    caption: str


def _caption(params: Params) -> tuple[str, list[Any]]:
    raw = params.get("caption")
    if not isinstance(raw, str) or not raw:
        return "", []
    try:
        text, entities = format_message_text(raw, params.get("parse_mode"), None)
    except MarkupError as error:
        raise bad_request(f"can't parse entities: {error}") from error
    except UnsupportedParseMode as error:
        raise bad_request("unsupported parse_mode") from error
    if utf16_len(text) > MAX_CAPTION_UTF16:
        raise bad_request("message caption is too long")
    return text, list(entities)


class VoiceMessages:
    """The ``sendVoice`` method over the emulator's chats."""

    def __init__(
        self,
        directory: ChatDirectory,
        flood: FloodControl | None,
        record: Callable[[dict[str, Any]], None],
    ) -> None:
        self._directory = directory
        self._flood = flood
        self._record = record
        self.sent: list[SentVoice] = []
        self.forbidden_chats: set[int] = set()
        """Private chats whose user accepts no voice messages (Telegram's privacy setting)."""

    def send_voice(self, params: Params) -> ApiObject:
        """Validate the upload and store a voice message in the chat."""
        chat = self._directory.chat_for_sending(params.get("chat_id"))
        upload = params.get("voice")
        if not isinstance(upload, UploadedFile):
            raise bad_request("there is no voice in the request")
        duration = params.get("duration")
        if not isinstance(duration, int) or duration <= 0:
            raise bad_request("duration is required for a voice message")
        try:
            decoded = check_voice_upload(upload.data)
        except NotVoice as error:
            raise bad_request(f"wrong file type: {error}") from error
        caption, entities = _caption(params)
        if chat["id"] in self.forbidden_chats:
            raise bad_request("VOICE_MESSAGES_FORBIDDEN")
        if self._flood is not None:
            self._flood.admit(chat["id"], self._directory.is_group(chat["id"]))
        message = self._directory.add_message(
            chat["id"], self._directory.bot_user, "", [], params.get("message_thread_id")
        )
        message.pop("text", None)
        number = len(self.sent) + 1
        message["voice"] = {
            "file_id": f"voice-{number}",
            "file_unique_id": f"uvoice-{number}",
            "duration": duration,
            "mime_type": "audio/ogg",
            "file_size": len(upload.data),
        }
        if caption:
            message["caption"] = caption
            if entities:
                message["caption_entities"] = entities
        self.sent.append(
            SentVoice(chat["id"], message["message_id"], duration, upload.data, decoded, caption)
        )
        self._record({**message, "chat_id": chat["id"], "text": caption, "kind": "voice"})
        return message

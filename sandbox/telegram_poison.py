"""The update side of a Telegram emulator's misbehaviour: media, malformed and raw updates.

Real Telegram only ever sends well-formed updates, but a proxy, a buggy local Bot API server or
a client bug can deliver anything; a bot must survive it. :class:`UpdateFaults` is mixed into
:class:`sandbox.telegram_api.TelegramEmulator` and queues such updates like any other, so they
are delivered (and must be confirmed) through getUpdates or the webhook.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sandbox.telegram_chats import ApiObject, ChatDirectory
from sandbox.telegram_updates import Signal, Update, UpdateQueue

PROXY_PAGE = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    "<body><h1>Bad Gateway</h1><p>The proxy could not reach the upstream server.</p></body></html>"
)
"""What a captive portal or a misconfigured reverse proxy answers instead of JSON."""


def _file(kind: str, size: int = 1024) -> ApiObject:
    return {"file_id": f"{kind}-file-id", "file_unique_id": f"{kind}-unique", "file_size": size}


MEDIA: dict[str, ApiObject] = {
    "photo": {
        "photo": [
            {**_file("photo-small"), "width": 90, "height": 60},
            {**_file("photo"), "width": 1280, "height": 853},
        ]
    },
    "sticker": {
        "sticker": {
            **_file("sticker"),
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": False,
            "is_video": False,
            "emoji": "👍",
        }
    },
    "voice": {"voice": {**_file("voice"), "duration": 3, "mime_type": "audio/ogg"}},
    "audio": {"audio": {**_file("audio"), "duration": 180, "title": "Song"}},
    "video": {"video": {**_file("video"), "width": 640, "height": 360, "duration": 5}},
    "video_note": {"video_note": {**_file("video_note"), "length": 240, "duration": 4}},
    "document": {"document": {**_file("document"), "file_name": "report.pdf"}},
    "animation": {
        "animation": {**_file("animation"), "width": 320, "height": 240, "duration": 2},
        "document": {**_file("animation"), "file_name": "funny.gif.mp4"},
    },
    "location": {"location": {"latitude": 48.8584, "longitude": 2.2945}},
    "contact": {"contact": {"phone_number": "+15550100", "first_name": "Carol"}},
}
"""The content fields Telegram sets for each kind of non-text message (captions aside)."""


class UpdateFaults:
    """Pushing updates that are not plain, well-formed text messages (mixed into the emulator)."""

    _directory: ChatDirectory
    _updates: UpdateQueue
    _updates_changed: Signal

    def push_media(
        self,
        chat_id: int,
        kind: str,
        *,
        caption: str | None = None,
        user_id: int | None = None,
        username: str = "alice",
        chat_type: str = "private",
    ) -> Update:
        """Queue a message carrying `kind` ("photo", "sticker", "voice", "document",
        "location", ... see :data:`MEDIA`), optionally with a caption instead of text."""
        message = self._new_message(chat_id, user_id, username, chat_type)
        del message["text"]
        message.update(MEDIA[kind])
        if caption is not None:
            message["caption"] = caption
        return self._queue("message", message)

    def push_malformed_message(
        self, chat_id: int, text: str, *, missing: Iterable[str], user_id: int | None = None
    ) -> Update:
        """Queue a text message with some required fields ("date", "chat", "message_id",
        "from") left out, as no real Telegram would send it."""
        message = self._new_message(chat_id, user_id, "alice", "private")
        message["text"] = text
        for name in missing:
            message.pop(name, None)
        return self._queue("message", message)

    def push_raw_update(self, kind: str, payload: Any) -> Update:
        """Queue an update whose `kind` field holds `payload` exactly, whatever it is (a string
        where a Message belongs, null, a list): the update_id is the only thing added."""
        return self._queue(kind, payload)

    def _new_message(
        self, chat_id: int, user_id: int | None, username: str, chat_type: str
    ) -> ApiObject:
        if chat_type == "private" and user_id is None:
            user_id = chat_id
        user = self._directory.remember_user(user_id, username, username.title())
        self._directory.open_chat(chat_id, chat_type, None, user, forum=False)
        stored = self._directory.add_message(chat_id, user, "", [])
        return dict(stored)  # the update's copy; the chat keeps the stored one

    def _queue(self, kind: str, payload: Any) -> Update:
        update = self._updates.push(kind, payload)
        self._updates_changed.notify()
        return update

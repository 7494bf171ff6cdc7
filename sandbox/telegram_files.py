"""Files in the Telegram emulator: getFile, downloads, and user messages carrying media.

A test puts bytes in the world with :meth:`MediaUpdates.push_photo`, ``push_document`` or
``push_voice`` (albums share a ``media_group_id``); the bot asks ``getFile`` for a
``file_path`` and downloads ``<base_file_url><token>/<file_path>``, as from the cloud Bot API,
which refuses files over :data:`MAX_DOWNLOAD_BYTES` to bots ("file is too big").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sandbox.telegram_chats import ApiObject, ChatDirectory
from sandbox.telegram_updates import Signal, Update, UpdateQueue
from sandbox.telegram_wire import Params, bad_request

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
"""The cloud Bot API serves bots files up to 20 MB."""


@dataclass(frozen=True, slots=True)
class StoredFile:
    """One file of the emulated world; ``size`` may exceed ``len(data)`` (a pretend giant)."""

    file_id: str
    unique_id: str
    path: str
    data: bytes
    size: int


class FileStore:
    """The files users sent, by file id and by download path."""

    def __init__(self) -> None:
        self._by_id: dict[str, StoredFile] = {}
        self._by_path: dict[str, StoredFile] = {}
        self.downloads: list[str] = []
        """Every file path downloaded, in order."""

    def add(self, data: bytes, folder: str, suffix: str, size: int | None = None) -> StoredFile:
        """Keep ``data`` (announced as ``size`` bytes when given) and return its record."""
        digest = hashlib.sha256(data).hexdigest()[:16]
        number = len(self._by_id) + 1
        stored = StoredFile(
            file_id=f"{folder}-{number}-{digest}",
            unique_id=f"u{number}{digest[:8]}",
            path=f"{folder}/file_{number}{suffix}",
            data=data,
            size=len(data) if size is None else size,
        )
        self._by_id[stored.file_id] = stored
        self._by_path[stored.path] = stored
        return stored

    def get_file(self, params: Params) -> ApiObject:
        """The Bot API's ``getFile``."""
        stored = self._by_id.get(str(params.get("file_id") or ""))
        if stored is None:
            raise bad_request("invalid file_id")
        if stored.size > MAX_DOWNLOAD_BYTES:
            raise bad_request("file is too big")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "file_size": stored.size,
            "file_path": stored.path,
        }

    def download(self, path: str) -> bytes | None:
        """The bytes at a download path (None: not found), recorded in :attr:`downloads`."""
        stored = self._by_path.get(path)
        if stored is None:
            return None
        self.downloads.append(path)
        return stored.data


def file_fields(stored: StoredFile) -> ApiObject:
    """The fields every file object in a message has."""
    return {"file_id": stored.file_id, "file_unique_id": stored.unique_id, "file_size": stored.size}


class MediaUpdates:
    """Users sending photos, files and voice notes (mixed into the emulator)."""

    files: FileStore
    _directory: ChatDirectory
    _updates: UpdateQueue
    _updates_changed: Signal

    def push_photo(
        self,
        chat_id: int,
        sizes: list[tuple[bytes, int, int]],
        *,
        caption: str | None = None,
        media_group_id: str | None = None,
    ) -> Update:
        """A photo in several sizes, each (JPEG bytes, width, height), smallest first."""
        photo = []
        for data, width, height in sizes:
            stored = self.files.add(data, "photos", ".jpg")
            photo.append({**file_fields(stored), "width": width, "height": height})
        return self._push_media(chat_id, {"photo": photo}, caption, media_group_id)

    def push_document(
        self,
        chat_id: int,
        data: bytes,
        file_name: str,
        mime_type: str | None,
        *,
        caption: str | None = None,
        announced_size: int | None = None,
    ) -> Update:
        """A file sent as a document (``announced_size``: pretend it is that large)."""
        suffix = "." + file_name.rsplit(".", 1)[-1]
        stored = self.files.add(data, "documents", suffix, size=announced_size)
        document: ApiObject = {**file_fields(stored), "file_name": file_name}
        if mime_type is not None:
            document["mime_type"] = mime_type
        return self._push_media(chat_id, {"document": document}, caption, None)

    def push_voice(self, chat_id: int, data: bytes, duration: int = 3) -> Update:
        """A voice note (OGG/Opus as Telegram records them)."""
        stored = self.files.add(data, "voice", ".oga")
        voice = {**file_fields(stored), "duration": duration, "mime_type": "audio/ogg"}
        return self._push_media(chat_id, {"voice": voice}, None, None)

    def _push_media(
        self,
        chat_id: int,
        content: dict[str, Any],
        caption: str | None,
        media_group_id: str | None,
    ) -> Update:
        user = self._directory.remember_user(chat_id, "alice", "Alice")
        self._directory.open_chat(chat_id, "private", None, user, forum=False)
        message = dict(self._directory.add_message(chat_id, user, "", []))
        del message["text"]
        message.update(content)
        if caption is not None:
            message["caption"] = caption
        if media_group_id is not None:
            message["media_group_id"] = media_group_id
        update = self._updates.push("message", message)
        self._updates_changed.notify()
        return update

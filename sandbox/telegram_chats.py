"""The chats, users and messages a Telegram emulator knows about.

Message ids are counted per chat and shared by everyone writing in it, as in Telegram, so a
user's message and the bot's reply in the same chat get consecutive ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox.telegram_text import Entity
from sandbox.telegram_wire import ApiError, bad_request

ApiObject = dict[str, Any]

FIRST_GENERATED_USER_ID = 100_001
"""Users pushed into group chats without an explicit id get ids from here on, by username."""

_GROUP_TYPES = frozenset({"group", "supergroup"})


@dataclass
class _Chat:
    chat: ApiObject
    next_message_id: int = 1
    messages: dict[int, ApiObject] = field(default_factory=dict)


class ChatDirectory:
    """Chats, users and stored messages, with Telegram's rules for who may be written to."""

    def __init__(self, bot_user: ApiObject, clock: Callable[[], float]) -> None:
        self.bot_user = bot_user
        self._clock = clock
        self._chats: dict[int, _Chat] = {}
        self._users: dict[int, ApiObject] = {}
        self._user_ids_by_name: dict[str, int] = {}

    def now(self) -> int:
        """The emulated clock as a Telegram timestamp (whole seconds)."""
        return int(self._clock())

    def remember_user(self, user_id: int | None, username: str, first_name: str) -> ApiObject:
        """Return the User object for a person, inventing a stable id from the username."""
        if user_id is None:
            user_id = self._user_ids_by_name.setdefault(
                username, FIRST_GENERATED_USER_ID + len(self._user_ids_by_name)
            )
        user: ApiObject = {"id": user_id, "is_bot": False, "first_name": first_name}
        if username:
            user["username"] = username
        user["language_code"] = "en"
        self._users[user_id] = user
        return user

    def open_chat(
        self, chat_id: int, chat_type: str, title: str | None, user: ApiObject, forum: bool
    ) -> ApiObject:
        """Return the Chat object for `chat_id`, creating it the first time someone writes."""
        known = self._chats.get(chat_id)
        if known is None:
            chat: ApiObject = {"id": chat_id, "type": chat_type}
            if chat_type == "private":
                chat["first_name"] = user["first_name"]
                if "username" in user:
                    chat["username"] = user["username"]
            else:
                chat["title"] = title or f"Chat {chat_id}"
            known = self._chats[chat_id] = _Chat(chat)
        if forum and known.chat["type"] == "supergroup":
            known.chat["is_forum"] = True
        return known.chat

    def chat_for_sending(self, chat_id: Any) -> ApiObject:
        """Return the chat the bot may write to, or raise the error Telegram would answer."""
        if chat_id is None or chat_id == "":
            raise bad_request("chat_id is empty")
        known = self._chats.get(chat_id) if isinstance(chat_id, int) else None
        if known is not None:
            return known.chat
        if chat_id in self._users:
            raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        raise bad_request("chat not found")

    def is_group(self, chat_id: int) -> bool:
        """Whether the chat is a group or supergroup (they have stricter flood limits)."""
        return self._chats[chat_id].chat["type"] in _GROUP_TYPES

    def add_message(
        self,
        chat_id: int,
        sender: ApiObject,
        text: str,
        entities: list[Entity],
        thread_id: int | None = None,
        reply_to: ApiObject | None = None,
        *,
        date: int | None = None,
    ) -> ApiObject:
        """Store a new message in a chat under its next message id and return it.

        ``date`` (epoch seconds) overrides the emulator's clock as the message's time.
        """
        record = self._chats[chat_id]
        message: ApiObject = {"message_id": record.next_message_id}
        record.next_message_id += 1
        if thread_id is not None:
            message["message_thread_id"] = thread_id
        when = self.now() if date is None else int(date)
        message.update({"from": sender, "chat": record.chat, "date": when})
        if reply_to is not None:
            message["reply_to_message"] = {
                key: value for key, value in reply_to.items() if key != "reply_to_message"
            }
        message["text"] = text
        if entities:
            message["entities"] = entities
        if thread_id is not None and record.chat.get("is_forum"):
            message["is_topic_message"] = True
        record.messages[message["message_id"]] = message
        return message

    def find_message(self, chat_id: int, message_id: Any) -> ApiObject | None:
        """Return a stored message, or None if it does not exist (or was deleted)."""
        record = self._chats.get(chat_id)
        if record is None or not isinstance(message_id, int):
            return None
        return record.messages.get(message_id)

    def last_message_from(self, chat_id: int, user_id: int) -> ApiObject | None:
        """Return the newest message `user_id` wrote in the chat, if any."""
        record = self._chats.get(chat_id)
        if record is None:
            return None
        mine = [message for message in record.messages.values() if message["from"]["id"] == user_id]
        return mine[-1] if mine else None

    def delete_message(self, chat_id: int, message_id: Any) -> bool:
        """Delete a stored message; False if there was none."""
        record = self._chats.get(chat_id)
        if record is None or not isinstance(message_id, int):
            return False
        return record.messages.pop(message_id, None) is not None

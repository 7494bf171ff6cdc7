"""The Bot API methods a chat gateway uses, other than getUpdates, over the emulator's state.

Each method validates its parameters the way Telegram does and raises `ApiError` with
Telegram's own error descriptions, so client code meets the failures it will meet in production.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from sandbox.telegram_callbacks import CallbackQueries, check_reply_markup, edit_reply_markup
from sandbox.telegram_chats import ApiObject, ChatDirectory
from sandbox.telegram_faults import FloodControl
from sandbox.telegram_live import LiveEvent, LiveRecord, send_message_draft
from sandbox.telegram_markup import MarkupError, UnsupportedParseMode, format_message_text
from sandbox.telegram_text import MAX_MESSAGE_UTF16, Entity, utf16_len
from sandbox.telegram_updates import UpdateQueue
from sandbox.telegram_voice import VoiceMessages
from sandbox.telegram_webhook import WebhookState
from sandbox.telegram_wire import Params, bad_request, int_param

CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
MAX_BOT_COMMANDS = 100
MAX_COMMAND_DESCRIPTION = 256
_COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")
_NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly the "
    "same as a current content and reply markup of the message"
)

Method = Callable[[Params], Any]


class BotApiMethods:
    """Dispatches Bot API calls by name and records what the bot did."""

    def __init__(
        self,
        directory: ChatDirectory,
        updates: UpdateQueue,
        flood: FloodControl | None,
        webhook: WebhookState,
    ) -> None:
        self._directory = directory
        self._updates = updates
        self._flood = flood
        self.webhook = webhook
        self.sent: list[dict[str, Any]] = []
        self.sent_by_chat: dict[int, list[dict[str, Any]]] = {}
        self.chat_actions: list[tuple[int, str]] = []
        self.commands: list[dict[str, Any]] = []
        self.live = LiveRecord()
        """Every draft and edit, with when it landed (what a user saw of live replies)."""
        self._commands_by_scope: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.callbacks = CallbackQueries()
        """Button presses and the bot's answers (answerCallbackQuery, editMessageReplyMarkup)."""
        self._bot_id = int(directory.bot_user["id"])
        self.voices = VoiceMessages(directory, flood, self.record_sent)
        """Voice messages the bot sent (``sendVoice``), with their audio."""
        methods: dict[str, Method] = {
            "getMe": self.get_me,
            "logOut": lambda params: True,
            "close": lambda params: True,
            "answerCallbackQuery": self.callbacks.answer,
            "editMessageReplyMarkup": self.edit_message_reply_markup,
            "deleteWebhook": self.delete_webhook,
            "setWebhook": self.set_webhook,
            "getWebhookInfo": self.get_webhook_info,
            "sendMessage": self.send_message,
            "sendVoice": self.voices.send_voice,
            "editMessageText": self.edit_message_text,
            "sendMessageDraft": lambda params: send_message_draft(
                params, directory, flood, self.live, _message_text
            ),
            "deleteMessage": self.delete_message,
            "sendChatAction": self.send_chat_action,
            "setMyCommands": self.set_my_commands,
            "getMyCommands": self.get_my_commands,
            "deleteMyCommands": self.delete_my_commands,
        }
        # Telegram matches method names case-insensitively.
        self._table = {name.lower(): (name, method) for name, method in methods.items()}

    def register(self, name: str, method: Method) -> None:
        """Serve one more method (e.g. ``getFile`` from the emulator's file store)."""
        self._table[name.lower()] = (name, method)

    def canonical_name(self, method: str) -> str | None:
        """The API's spelling of a method name, or None if the emulator does not know it."""
        entry = self._table.get(method.lower())
        return entry[0] if entry else None

    def call(self, method: str, params: Params) -> Any:
        """Run a known method and return its result; raises `ApiError` like Telegram."""
        return self._table[method.lower()][1](params)

    def get_me(self, params: Params) -> ApiObject:
        """The bot's own User object with its capabilities."""
        return {
            **self._directory.bot_user,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    @property
    def webhook_url(self) -> str:
        """The webhook URL set ("" while updates are fetched with getUpdates)."""
        return self.webhook.url

    def delete_webhook(self, params: Params) -> bool:
        """Switch back to getUpdates, optionally dropping what is pending."""
        self.webhook.remove()
        if params.get("drop_pending_updates"):
            self._updates.clear()
        return True

    def set_webhook(self, params: Params) -> bool:
        """Store the webhook (an empty url removes it); while one is set, updates are POSTed
        to it and getUpdates is refused. allowed_updates is shared with getUpdates."""
        self.webhook.configure(params)
        self._updates.set_allowed_types(params.get("allowed_updates"))
        if params.get("drop_pending_updates"):
            self._updates.clear()
        return True

    def get_webhook_info(self, params: Params) -> ApiObject:
        """The WebhookInfo: URL, updates waiting, the last delivery error."""
        return self.webhook.info(self._updates)

    def send_message(self, params: Params) -> ApiObject:
        """Validate, format and store a bot message; record it for tests."""
        chat = self._directory.chat_for_sending(params.get("chat_id"))
        text, entities = _message_text(params)
        reply_to = self._reply_target(chat["id"], params)
        check_reply_markup(params.get("reply_markup"))
        thread_id = params.get("message_thread_id")
        if thread_id is None and reply_to is not None:
            thread_id = reply_to.get("message_thread_id")  # a reply lands in its topic
        if self._flood is not None:
            self._flood.admit(chat["id"], self._directory.is_group(chat["id"]))
        message = self._directory.add_message(
            chat["id"], self._directory.bot_user, text, entities, thread_id, reply_to
        )
        if params.get("reply_markup") is not None:
            message["reply_markup"] = params["reply_markup"]
        record = {
            **message,
            "chat_id": chat["id"],
            "entities": entities,
            "parse_mode": params.get("parse_mode"),
            "message_thread_id": thread_id,
            "reply_to_message_id": reply_to["message_id"] if reply_to else None,
            "source_text": params.get("text"),
        }
        self.record_sent(record)
        return message

    def record_sent(self, record: dict[str, Any]) -> None:
        """Keep a message the bot sent (``record["chat_id"]`` names its chat) for tests."""
        self.sent.append(record)
        self.sent_by_chat.setdefault(record["chat_id"], []).append(record)

    def _reply_target(self, chat_id: int, params: Params) -> ApiObject | None:
        reply = params.get("reply_parameters")
        if isinstance(reply, dict):
            message_id = reply.get("message_id")
            tolerant = bool(reply.get("allow_sending_without_reply"))
        else:
            message_id = params.get("reply_to_message_id")
            tolerant = bool(params.get("allow_sending_without_reply"))
        if message_id is None:
            return None
        target = self._directory.find_message(chat_id, message_id)
        if target is None and not tolerant:
            raise bad_request("message to be replied not found")
        return target

    def edit_message_text(self, params: Params) -> ApiObject | bool:
        """Replace the text of one of the bot's messages (streaming replies use this)."""
        if params.get("inline_message_id"):
            _message_text(params)
            return True
        chat = self._directory.chat_for_sending(params.get("chat_id"))
        message = self._directory.find_message(chat["id"], params.get("message_id"))
        if message is None:
            raise bad_request("message to edit not found")
        if message["from"]["id"] != self._directory.bot_user["id"]:
            raise bad_request("message can't be edited")
        text, entities = _message_text(params)
        markup = params.get("reply_markup")
        if (text, entities, markup) == (
            message["text"],
            message.get("entities", []),
            message.get("reply_markup"),
        ):
            raise bad_request(_NOT_MODIFIED)
        if self._flood is not None:  # edits count against the flood limits like sends
            self._flood.admit(chat["id"], self._directory.is_group(chat["id"]))
        self.live.edits.append(
            LiveEvent(
                chat["id"],
                text,
                time.monotonic(),
                message_id=message["message_id"],
                parse_mode=params.get("parse_mode"),
            )
        )
        message.update(text=text, entities=entities, edit_date=self._directory.now())
        if not entities:
            message.pop("entities")
        check_reply_markup(markup)
        if markup:  # an edit without reply_markup removes the inline keyboard
            message["reply_markup"] = markup
        else:
            message.pop("reply_markup", None)
        for record in self._records_of(chat["id"], message["message_id"]):
            record.update(text=text, entities=entities, parse_mode=params.get("parse_mode"))
            record.update(edit_date=message["edit_date"], source_text=params.get("text"))
            _set_markup(record, message.get("reply_markup"))
        return message

    def edit_message_reply_markup(self, params: Params) -> ApiObject:
        """Replace or remove the buttons of one of the bot's messages."""
        message = edit_reply_markup(self._directory, self.callbacks, self._bot_id, params)
        for record in self._records_of(message["chat"]["id"], message["message_id"]):
            _set_markup(record, message.get("reply_markup"))
        return message

    def delete_message(self, params: Params) -> bool:
        """Delete a message; the test record stays, marked deleted."""
        chat = self._directory.chat_for_sending(params.get("chat_id"))
        message_id = int_param(params, "message_id")
        if not self._directory.delete_message(chat["id"], message_id):
            raise bad_request("message to delete not found")
        for record in self._records_of(chat["id"], message_id):
            record["deleted"] = True
        return True

    def _records_of(self, chat_id: int, message_id: int) -> list[dict[str, Any]]:
        in_chat = self.sent_by_chat.get(chat_id, [])
        return [record for record in in_chat if record["message_id"] == message_id]

    def send_chat_action(self, params: Params) -> bool:
        """Record a chat action ("typing", ...)."""
        chat = self._directory.chat_for_sending(params.get("chat_id"))
        action = params.get("action")
        if action not in CHAT_ACTIONS:
            raise bad_request("wrong parameter action in request")
        self.chat_actions.append((chat["id"], action))
        return True

    def set_my_commands(self, params: Params) -> bool:
        """Store the command menu for a scope and language."""
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise bad_request("can't parse commands JSON object")
        if len(commands) > MAX_BOT_COMMANDS:
            raise bad_request("BOT_COMMANDS_TOO_MUCH")
        for command in commands:
            _check_command(command)
        stored = [
            {"command": item["command"], "description": item["description"]} for item in commands
        ]
        self._commands_by_scope[_scope_key(params)] = stored
        self.commands = list(stored)
        return True

    def get_my_commands(self, params: Params) -> list[dict[str, Any]]:
        """The command menu stored for a scope and language."""
        return list(self._commands_by_scope.get(_scope_key(params), []))

    def delete_my_commands(self, params: Params) -> bool:
        """Forget the command menu of a scope and language."""
        self._commands_by_scope.pop(_scope_key(params), None)
        return True


def _set_markup(record: dict[str, Any], markup: Any) -> None:
    """A test record shows the buttons the message has now."""
    if markup:
        record["reply_markup"] = markup
    else:
        record.pop("reply_markup", None)


def _message_text(params: Params) -> tuple[str, list[Entity]]:
    """Parse a message's text as Telegram does, raising Telegram's 400 errors."""
    raw = params.get("text")
    if not isinstance(raw, str) or not raw:
        raise bad_request("message text is empty")
    explicit = params.get("entities")
    try:
        text, entities = format_message_text(
            raw, params.get("parse_mode"), explicit if isinstance(explicit, list) else None
        )
    except MarkupError as error:
        raise bad_request(f"can't parse entities: {error}") from error
    except UnsupportedParseMode as error:
        raise bad_request("unsupported parse_mode") from error
    if not text:
        raise bad_request("message text is empty")
    if utf16_len(text) > MAX_MESSAGE_UTF16:
        raise bad_request("message is too long")
    return text, entities


def _check_command(command: Any) -> None:
    if not isinstance(command, dict) or not _COMMAND_NAME.fullmatch(
        str(command.get("command", ""))
    ):
        raise bad_request("BOT_COMMAND_INVALID")
    description = command.get("description")
    if not isinstance(description, str) or not 1 <= len(description) <= MAX_COMMAND_DESCRIPTION:
        raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")


def _scope_key(params: Params) -> tuple[str, str]:
    scope = params.get("scope") or {"type": "default"}
    return json.dumps(scope, sort_keys=True), str(params.get("language_code") or "")

"""Inline keyboards and callback queries: a user pressing a bot message's button.

A press becomes a ``callback_query`` update (``id``, ``from``, ``message``, ``chat_instance``,
``data``), delivered only when ``allowed_updates`` lets callback queries through. The bot
answers it with ``answerCallbackQuery`` (once; an unknown or already answered id is refused as
Telegram refuses it) and may change the buttons with ``editMessageReplyMarkup``.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from sandbox.telegram_chats import ApiObject, ChatDirectory
from sandbox.telegram_wire import Params, bad_request

MAX_CALLBACK_DATA_BYTES = 64
MAX_ANSWER_TEXT = 200
_QUERY_INVALID = "query is too old and response timeout expired or query ID is invalid"


def check_reply_markup(markup: Any) -> None:
    """Refuse an inline keyboard Telegram would refuse (callback_data of 1 to 64 bytes)."""
    if not isinstance(markup, dict) or "inline_keyboard" not in markup:
        return
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise bad_request(
            "can't parse inline keyboard button: inline_keyboard must be an array of arrays"
        )
    for button in itertools.chain.from_iterable(rows):
        if not isinstance(button, dict) or not button.get("text"):
            raise bad_request("can't parse inline keyboard button: text is empty")
        data = button.get("callback_data")
        if data is not None and not 1 <= len(str(data).encode()) <= MAX_CALLBACK_DATA_BYTES:
            raise bad_request("BUTTON_DATA_INVALID")


@dataclass(slots=True)
class CallbackQueries:
    """The presses made, and the bot's answers to them."""

    _next_id: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    open: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: list[dict[str, Any]] = field(default_factory=list)
    """Every answerCallbackQuery: callback_query_id, text, show_alert."""
    markup_edits: list[dict[str, Any]] = field(default_factory=list)
    """Every editMessageReplyMarkup: chat_id, message_id, reply_markup (None: removed)."""

    def press(
        self, message: ApiObject, data: str, user: ApiObject, chat_instance: str
    ) -> dict[str, Any]:
        """A ``CallbackQuery`` for ``user`` pressing the button with ``data`` on ``message``;
        KeyError when the message has no such button (a test's mistake)."""
        markup = message.get("reply_markup") or {}
        buttons = itertools.chain.from_iterable(markup.get("inline_keyboard", []))
        if not any(button.get("callback_data") == data for button in buttons):
            raise KeyError(f"message {message['message_id']} has no button with data {data!r}")
        query_id = str(next(self._next_id) + 4_000_000_000)
        query = {
            "id": query_id,
            "from": user,
            "message": copy.deepcopy(message),
            "chat_instance": chat_instance,
            "data": data,
        }
        self.open[query_id] = query
        return query

    def answer(self, params: Params) -> bool:
        """answerCallbackQuery: once per query, text at most 200 characters."""
        query_id = str(params.get("callback_query_id") or "")
        if query_id not in self.open:
            raise bad_request(_QUERY_INVALID)
        text = params.get("text")
        if text is not None and len(str(text)) > MAX_ANSWER_TEXT:
            raise bad_request("MESSAGE_TOO_LONG")
        del self.open[query_id]
        self.answers.append(
            {
                "callback_query_id": query_id,
                "text": text,
                "show_alert": bool(params.get("show_alert")),
            }
        )
        return True


def edit_reply_markup(
    directory: ChatDirectory, callbacks: CallbackQueries, bot_id: int, params: Params
) -> ApiObject:
    """editMessageReplyMarkup: replace (or, without one, remove) a bot message's keyboard."""
    chat = directory.chat_for_sending(params.get("chat_id"))
    message = directory.find_message(chat["id"], params.get("message_id"))
    if message is None:
        raise bad_request("message to edit not found")
    if message["from"]["id"] != bot_id:
        raise bad_request("message can't be edited")
    markup = params.get("reply_markup") or None
    check_reply_markup(markup)
    if markup == message.get("reply_markup"):
        raise bad_request(
            "message is not modified: specified new message content and reply markup are "
            "exactly the same as a current content and reply markup of the message"
        )
    if markup is None:
        message.pop("reply_markup", None)
    else:
        message["reply_markup"] = markup
    callbacks.markup_edits.append(
        {"chat_id": chat["id"], "message_id": message["message_id"], "reply_markup": markup}
    )
    return message

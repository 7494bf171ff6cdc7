"""What the kill soak's model answers, and how the chats' transcripts are checked afterwards.

Every user message carries a marker (``c3m7``: chat 3, message 7). The emulated model answers a
turn with a text built only from the markers of its last user message, so the checker knows
exactly what each reply must say: ``ANS c3m7 c3m8 :: <filler> :: END c3m7 c3m8``. Every
``LONG_EVERY``-th message asks for a filler longer than a Telegram message (emoji included, so
UTF-16 counting matters), which goes out in several parts. In a chat's transcript (all the
bot's messages joined, whitespace dropped) the replies must follow each other with nothing
left over: a part sent twice or lost breaks a reply's filler or leaves text between replies.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from sandbox.telegram_api import TelegramEmulator

LONG_EVERY = 4
"""Every fourth message of a chat (0, 4, 8, ...) gets a multi-part answer."""
LONG_WORDS = 1300
"""About 8,000 characters: two or three Telegram messages."""
EMOJI_EVERY = 20
EMOJI = "\U0001f600"
"""Two UTF-16 code units each: Telegram's limit is counted in those."""
MARKER = re.compile(r"c(\d+)m(\d+)")
_REPLY = re.compile(r"ANS((?:c\d+m\d+)+)::(.*?)::END\1", re.S)


def marker(chat: int, index: int) -> str:
    """The marker of a chat's ``index``-th message."""
    return f"c{chat}m{index}"


def message_text(chat: int, index: int) -> str:
    """What the simulated user writes."""
    return f"{marker(chat, index)} how are things?"


def markers_in(text: str) -> list[str]:
    """The markers in a text, in order, each once."""
    return list(dict.fromkeys(match.group(0) for match in MARKER.finditer(text)))


def _is_long(markers: Iterable[str]) -> bool:
    return any(int(MARKER.fullmatch(m).group(2)) % LONG_EVERY == 0 for m in markers)  # type: ignore[union-attr]


def filler(markers: Sequence[str]) -> str:
    """The body of the answer to a turn with these markers."""
    if not _is_long(markers):
        return "fine, thanks"
    words = [f"w{n}" if n % EMOJI_EVERY else f"w{n}{EMOJI}" for n in range(LONG_WORDS)]
    return " ".join(words)


def reply_text(markers: Sequence[str]) -> str:
    """The whole answer the emulated model gives to a turn with these markers."""
    names = " ".join(markers)
    return f"ANS {names} :: {filler(markers)} :: END {names}"


def _squeezed(text: str) -> str:
    return "".join(text.split())


def check_transcript(chat: int, sent: Sequence[str], expected: int) -> list[str]:
    """Problems in one chat's bot messages (oldest first) given how many messages it sent."""
    joined = _squeezed("".join(sent))
    problems: list[str] = []
    answered: Counter[str] = Counter()
    position = 0
    last_index = -1
    for match in _REPLY.finditer(joined):
        if match.start() != position:
            problems.append(f"chat {chat}: stray text {joined[position : match.start()][:60]!r}")
        position = match.end()
        markers = MARKER.findall(match.group(1))
        names = [f"c{c}m{m}" for c, m in markers]
        if match.group(2) != _squeezed(filler(names)):
            problems.append(f"chat {chat}: reply to {names} has a part missing or doubled")
        for name in names:
            answered[name] += 1
            index = int(MARKER.fullmatch(name).group(2))  # type: ignore[union-attr]
            if index < last_index:
                problems.append(f"chat {chat}: {name} answered out of order")
            last_index = max(last_index, index)
    if position != len(joined):
        problems.append(f"chat {chat}: stray text at the end {joined[position:][:60]!r}")
    for index in range(expected):
        count = answered[marker(chat, index)]
        if count != 1:
            problems.append(f"chat {chat}: {marker(chat, index)} answered {count} times")
    return problems


def check_user_texts(chat: int, user_texts: Sequence[str], expected: int) -> list[str]:
    """Each message's text stored exactly once among the chat session's user messages."""
    stored = Counter(name for text in user_texts for name in MARKER.findall(text))
    problems = []
    for index in range(expected):
        count = stored[(str(chat), str(index))]
        if count != 1:
            problems.append(f"chat {chat}: {marker(chat, index)} stored {count} times")
    return problems


def bot_texts(telegram: TelegramEmulator, chat: int) -> list[str]:
    """What the chat shows of the bot now: its messages as last edited, deleted ones gone."""
    return [m["text"] for m in telegram.sent_messages(chat) if not m.get("deleted")]


def answered_everything(telegram: TelegramEmulator, chats: list[int], messages: int) -> bool:
    """Whether every chat's last reply answers its last message (the soak may end)."""
    for chat in chats:
        replies = bot_texts(telegram, chat)
        if not replies or marker(chat, messages - 1) not in replies[-1].rsplit("END", 1)[-1]:
            return False
    return True

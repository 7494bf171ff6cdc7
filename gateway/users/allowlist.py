"""Who may talk to the bot on a platform, and telling a refused user once.

``allowed_users`` entries are typed: a number (``42`` or ``"42"``) is a user id and matches only
the user id; ``"@name"`` is a username and matches only the username (case-insensitive). A bare
word (``"bob"``, as older configurations wrote usernames) is a username too. An id never matches
a username or the other way round: a Discord user who picks the username "42" is not user 42.
An empty list denies everyone unless ``allow_all`` is set explicitly: a bot left open by
accident would spend its owner's money on strangers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

REFUSAL_TEXT = (
    "Sorry, this bot is private and you are not on its list of allowed users. "
    "Ask its owner to add your user id ({user_id}) to allowed_users."
)
USERNAME_PREFIX = "@"


@dataclass(frozen=True, slots=True)
class UserEntry:
    """One typed allowlist entry: a user id, or a username (lower case, without ``@``)."""

    user_id: str | None = None
    username: str | None = None

    @classmethod
    def parse(cls, entry: int | str) -> UserEntry | None:
        """``42``/``"42"`` -> id, ``"@bob"``/``"bob"`` -> username, blank -> None."""
        if isinstance(entry, int):
            return cls(user_id=str(entry))
        text = entry.strip()
        if text.startswith(USERNAME_PREFIX):
            name = text.removeprefix(USERNAME_PREFIX).strip().lower()
            return cls(username=name) if name else None
        if text.isdigit():
            return cls(user_id=text)
        return cls(username=text.lower()) if text else None


class UserMatcher:
    """Matches users against typed entries: ids against ids, usernames against usernames."""

    def __init__(self, entries: Iterable[int | str]) -> None:
        parsed = [e for e in (UserEntry.parse(entry) for entry in entries) if e is not None]
        self.user_ids = frozenset(e.user_id for e in parsed if e.user_id is not None)
        self.usernames = frozenset(e.username for e in parsed if e.username is not None)

    def matches(self, user_id: str, username: str | None = None) -> bool:
        """Whether the user is listed, by id or by username."""
        if user_id.strip() in self.user_ids:
            return True
        return username is not None and username.strip().lower() in self.usernames

    def __bool__(self) -> bool:
        return bool(self.user_ids or self.usernames)


class Allowlist:
    """Decides whether a user may use the bot, and remembers whom it already told no."""

    def __init__(self, allowed_users: Iterable[int | str], *, allow_all: bool = False) -> None:
        self.allow_all = allow_all
        self._allowed = UserMatcher(allowed_users)
        self._told: set[str] = set()

    def allows(self, user_id: str, username: str | None = None) -> bool:
        """Whether the user (by id, or by username) may talk to the bot."""
        return self.allow_all or self._allowed.matches(user_id, username)

    def should_tell(self, user_id: str) -> bool:
        """True the first time a refused user is seen (in this process), then False."""
        if user_id in self._told:
            return False
        self._told.add(user_id)
        return True

    def remember_told(self, user_ids: Iterable[str]) -> None:
        """Mark users as already told (e.g. from refusals recorded before a restart)."""
        self._told.update(user_ids)

    def refusal_text(self, user_id: str) -> str:
        """The one polite refusal a user gets."""
        return REFUSAL_TEXT.format(user_id=user_id)

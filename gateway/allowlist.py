"""Who may talk to the bot on a platform, and telling a refused user once.

``allowed_users`` lists user ids or usernames (with or without ``@``, case-insensitive). An
empty list denies everyone unless ``allow_all`` is set explicitly: a bot left open by accident
would spend its owner's money on strangers.
"""

from __future__ import annotations

from collections.abc import Iterable

REFUSAL_TEXT = (
    "Sorry, this bot is private and you are not on its list of allowed users. "
    "Ask its owner to add your user id ({user_id}) to allowed_users."
)


def _normalise(entry: int | str) -> str:
    return str(entry).strip().removeprefix("@").lower()


class Allowlist:
    """Decides whether a user may use the bot, and remembers whom it already told no."""

    def __init__(self, allowed_users: Iterable[int | str], *, allow_all: bool = False) -> None:
        self.allow_all = allow_all
        self._allowed = {_normalise(entry) for entry in allowed_users if str(entry).strip()}
        self._told: set[str] = set()

    def allows(self, user_id: str, username: str | None = None) -> bool:
        """Whether the user (by id, or by username) may talk to the bot."""
        if self.allow_all:
            return True
        if _normalise(user_id) in self._allowed:
            return True
        return username is not None and _normalise(username) in self._allowed

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

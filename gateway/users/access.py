"""Who may talk to the bot at run time, and whether a user's budget allows another answer.

Access: the admins (``platforms.<name>.admin_users``) always; else the newest run-time
decision about the user (``/allow``, ``/deny``, ``hermes users``: by id, or by username),
which overrides the configuration; else ``allowed_users`` / ``allow_all``. The decisions are
read from the database at start, again right after a command changes them, and at most every
:data:`REFRESH_SECONDS` otherwise (so ``hermes users`` run beside the daemon takes effect
within seconds).

Budgets (``limits``): a user whose spend today (UTC) reached ``daily_usd_per_user``, or any
user once everyone's spend this month reached ``monthly_usd_total``, is refused before any
model call, with when it renews; admins are exempt unless ``admins_exempt: false``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from gateway.config.schema import LimitsSettings
from gateway.store.ports import UserStore
from gateway.store.repository_users import Access, AccessRecord

REFRESH_SECONDS = 5.0
DAILY_REFUSAL = (
    "Sorry, you have used today's budget for this bot (${spent:.2f} of ${limit:.2f}). "
    "It renews at 00:00 UTC; please write again then."
)
MONTHLY_REFUSAL = (
    "Sorry, this bot has used its budget for the month (${spent:.2f} of ${limit:.2f}). "
    "It renews on the 1st (UTC); please write again then."
)


class RuntimeAccess:
    """The run-time access decisions, per platform, kept fresh from the database."""

    def __init__(self, repo: UserStore) -> None:
        self.repo = repo
        self._records: list[AccessRecord] = []
        self._loaded_at: float | None = None

    async def refresh(self) -> None:
        """Read every decision again."""
        self._records = await self.repo.access_records()
        self._loaded_at = time.monotonic()

    async def refresh_if_stale(self) -> None:
        if self._loaded_at is None or time.monotonic() - self._loaded_at >= REFRESH_SECONDS:
            await self.refresh()

    def decision(self, platform: str, user_id: str, username: str | None) -> Access | None:
        """The newest decision about this user (by id or by username), None if there is none."""
        name = username.lower().removeprefix("@") if username else None
        found: Access | None = None
        for record in self._records:  # oldest first: the newest decision wins
            if record.platform != platform:
                continue
            if record.user_id == user_id or (name is not None and record.username == name):
                found = record.access
        return found


def day_start(now: datetime | None = None) -> datetime:
    """Midnight UTC of ``now``'s day (default: today)."""
    return (now or datetime.now(UTC)).replace(hour=0, minute=0, second=0, microsecond=0)


def month_start(now: datetime | None = None) -> datetime:
    """The first of ``now``'s month, midnight UTC (default: this month)."""
    return day_start(now).replace(day=1)


class Budget:
    """``limits``: whether a user may have another answer today and this month."""

    def __init__(self, limits: LimitsSettings, repo: UserStore) -> None:
        self.limits = limits
        self.repo = repo

    async def refusal(self, user_key: str | None, *, is_admin: bool) -> str | None:
        """The polite refusal for a user over a limit, else None."""
        limits = self.limits
        if is_admin and limits.admins_exempt:
            return None
        now = datetime.now(UTC)
        monthly = limits.monthly_usd_total
        if monthly is not None:
            spent = await self.repo.spend_since(month_start(now))
            if spent >= monthly:
                return MONTHLY_REFUSAL.format(spent=spent, limit=monthly)
        daily = limits.daily_usd_per_user
        if daily is not None and user_key is not None:
            spent = await self.repo.spend_since(day_start(now), user_key)
            if spent >= daily:
                return DAILY_REFUSAL.format(spent=spent, limit=daily)
        return None


def usage_window(days: int, now: datetime | None = None) -> datetime:
    """The start of the last ``days`` UTC days (today included)."""
    return day_start(now) - timedelta(days=days - 1)

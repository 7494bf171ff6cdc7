"""Where a session lives: its key, and the platform coordinates and writer of its turn."""

from __future__ import annotations

from dataclasses import dataclass

from agent.memory import MemoryOwner
from gateway.jobs.schedule_tool import JobOrigin
from gateway.messages.inbound import InboundMessage


@dataclass(slots=True)
class SessionAddress:
    """Where a session lives: its key and the platform coordinates it was created from."""

    key: str
    platform: str
    chat_id: str
    user_id: str | None = None
    is_group: bool = False
    """Whether several people share the chat (its memory is then the chat's, not a user's)."""
    thread_id: str | None = None
    """The topic or thread within the chat, where it has one (a job's answers go there)."""
    username: str | None = None
    """The writing user's username, where the platform has one."""
    is_admin: bool = False
    """Whether the user writing is one of the platform's ``admin_users``."""

    @classmethod
    def of(cls, message: InboundMessage, *, is_admin: bool) -> SessionAddress:
        """The session a platform message belongs to, and who writes it."""
        return cls(
            message.session_key,
            message.platform,
            message.chat_id,
            message.user_id,
            is_group=message.is_group,
            thread_id=message.thread_id,
            username=message.username,
            is_admin=is_admin,
        )

    @property
    def offers_admin_tools(self) -> bool:
        """Admin-only tools (``mcp.servers.*.users: admins``) are offered only in an admin's
        own chat: a group's tool list is shared by everyone in it."""
        return self.is_admin and not self.is_group

    @property
    def user_key(self) -> str | None:
        """``platform:user_id`` of the user writing (usage and budgets are theirs)."""
        return f"{self.platform}:{self.user_id}" if self.user_id else None

    @property
    def memory_owner(self) -> MemoryOwner | None:
        """Whose memory the session reads and writes: the group's, or the user's."""
        return MemoryOwner.for_chat(
            self.platform, self.chat_id, self.user_id, is_group=self.is_group
        )

    @property
    def job_origin(self) -> JobOrigin | None:
        """Where jobs scheduled in this session run and answer (None: no user to own them)."""
        if self.user_id is None:
            return None
        chat_type = "group" if self.is_group else "private"
        return JobOrigin(
            self.platform,
            self.user_id,
            self.chat_id,
            self.thread_id,
            chat_type,
            self.key,
            self.username,
        )

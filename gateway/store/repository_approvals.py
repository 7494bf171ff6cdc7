"""Tool approvals: the tools a chat allowed for good, and the approval prompts the bot sent."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Table, insert, select, update

from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import ApprovalPromptRow, ToolApprovalRow, utcnow

tool_approvals_table = cast(Table, ToolApprovalRow.__table__)
approval_prompts_table = cast(Table, ApprovalPromptRow.__table__)


class ApprovalQueries(RepositoryBase):
    """Reading and writing tool approvals and approval prompts."""

    async def tool_always_allowed(self, platform: str, chat_id: str, tool: str) -> bool:
        """Whether someone answered "Always in this chat" for ``tool`` in this chat."""
        query = select(ToolApprovalRow.id).where(
            ToolApprovalRow.platform == platform,
            ToolApprovalRow.chat_id == chat_id,
            ToolApprovalRow.tool == tool,
        )
        async with self._reading() as session:
            return (await session.scalar(query)) is not None

    async def allow_tool_always(
        self, platform: str, chat_id: str, tool: str, user_id: str | None
    ) -> None:
        """Allow ``tool`` in this chat from now on (a second time changes nothing)."""
        if await self.tool_always_allowed(platform, chat_id, tool):
            return
        row = {
            "platform": platform,
            "chat_id": chat_id,
            "tool": tool,
            "user_id": user_id,
            "created_at": utcnow(),
        }

        def add(connection: Connection) -> None:
            connection.execute(insert(tool_approvals_table), row)

        await self._write(add)

    async def record_approval_prompt(
        self, platform: str, chat_id: str, platform_message_id: str, tool: str
    ) -> None:
        """Remember an approval prompt right after it was sent (a bot message of the chat)."""
        row = {
            "platform": platform,
            "chat_id": chat_id,
            "platform_message_id": platform_message_id,
            "tool": tool,
            "created_at": utcnow(),
        }

        def add(connection: Connection) -> None:
            connection.execute(insert(approval_prompts_table), row)

        await self._write(add)

    async def record_approval_decision(
        self, platform: str, chat_id: str, platform_message_id: str, decision: str
    ) -> None:
        """Note how an approval prompt was answered."""

        def change(connection: Connection) -> None:
            connection.execute(
                update(approval_prompts_table)
                .where(
                    approval_prompts_table.c.platform == platform,
                    approval_prompts_table.c.chat_id == chat_id,
                    approval_prompts_table.c.platform_message_id == platform_message_id,
                )
                .values(decision=decision)
            )

        await self._write(change)

    async def open_approval_prompts(self, platform: str, before: datetime) -> list[tuple[str, str]]:
        """(chat id, platform message id) of prompts sent before ``before`` and never
        answered: a previous run died while they waited."""
        query = (
            select(ApprovalPromptRow.chat_id, ApprovalPromptRow.platform_message_id)
            .where(
                ApprovalPromptRow.platform == platform,
                ApprovalPromptRow.decision.is_(None),
                ApprovalPromptRow.created_at < before,
            )
            .order_by(ApprovalPromptRow.id)
        )
        async with self._reading() as session:
            return [(str(c), str(m)) for c, m in (await session.execute(query)).all()]

"""MCP tool lists (each server's last listing, one row per server, replaced as a whole) and
large tool outputs (kept whole, read back only by their own session)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Connection, Table, delete, insert, select

from agent.engines.toolkit.tool_output_pruning import call_arguments_text
from agent.tools.mcp.spec import McpToolInfo
from agent.types import content_text
from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import McpToolListRow, MessageRow, ToolOutputRow, utcnow

tool_lists_table = cast(Table, McpToolListRow.__table__)
tool_outputs_table = cast(Table, ToolOutputRow.__table__)


def _info(tool: dict[str, Any]) -> McpToolInfo:
    return McpToolInfo(
        tool["name"],
        tool.get("description", ""),
        tool.get("input_schema", {}),
        tool.get("model_name", ""),
    )


class McpToolListQueries(RepositoryBase):
    """Reading and replacing the servers' kept tool lists."""

    async def load_mcp_tool_lists(self) -> dict[str, list[McpToolInfo]]:
        """Every server's last tool list, by server name, in the server's order."""
        async with self._reading() as session:
            rows = (await session.scalars(select(McpToolListRow))).all()
            return {row.server: [_info(tool) for tool in row.tools] for row in rows}

    async def save_mcp_tool_list(self, server: str, tools: Sequence[McpToolInfo]) -> None:
        """Replace the server's kept tool list."""
        values = {
            "server": server,
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                    "model_name": t.model_name,
                }
                for t in tools
            ],
            "updated_at": utcnow(),
        }

        def replace(connection: Connection) -> None:
            connection.execute(delete(McpToolListRow).where(McpToolListRow.server == server))
            connection.execute(insert(tool_lists_table), values)

        await self._write(replace)


class ToolOutputQueries(RepositoryBase):
    """Large tool results, kept whole per session (the ``tool_output`` tool pages them)."""

    async def save_tool_output(self, session_id: int, tool: str, text: str) -> int:
        """Keep ``text``; returns its id (the ref the model pages it by)."""
        values = {"session_id": session_id, "tool": tool, "text": text, "created_at": utcnow()}

        def save(connection: Connection) -> int:
            statement = insert(tool_outputs_table).returning(ToolOutputRow.id)
            return int(connection.execute(statement, values).scalar_one())

        return await self._write(save)

    async def load_tool_result(self, session_id: int, call_id: str) -> str | None:
        """The text of call ``call_id``'s result as it first entered the session (its first
        row: later rows of the call are cleared or repaired copies)."""
        query = (
            select(MessageRow.content)
            .where(
                MessageRow.session_id == session_id,
                MessageRow.role == "tool",
                MessageRow.tool_call_id == call_id,
            )
            .order_by(MessageRow.id)
            .limit(1)
        )
        async with self._reading() as session:
            found = (await session.execute(query)).first()
        return None if found is None else content_text(found[0], image_marker=None)

    async def load_tool_input(self, session_id: int, call_id: str) -> str | None:
        """The arguments of call ``call_id`` as the model first sent them: from the assistant
        message right before the call's first result (later copies may be cleared)."""
        first_result = (
            select(MessageRow.id)
            .where(
                MessageRow.session_id == session_id,
                MessageRow.role == "tool",
                MessageRow.tool_call_id == call_id,
            )
            .order_by(MessageRow.id)
            .limit(1)
            .scalar_subquery()
        )
        query = (
            select(MessageRow.tool_calls)
            .where(
                MessageRow.session_id == session_id,
                MessageRow.role == "assistant",
                MessageRow.id < first_result,
            )
            .order_by(MessageRow.id.desc())
            .limit(1)
        )
        async with self._reading() as session:
            calls = (await session.execute(query)).scalar_one_or_none()
        for call in calls or []:
            if isinstance(call, dict) and str(call.get("id")) == call_id:
                return call_arguments_text(call)
        return None

    async def load_tool_output(self, session_id: int, output_id: int) -> str | None:
        """The kept text, None when the session has no output with that id."""
        query = select(ToolOutputRow.text).where(
            ToolOutputRow.id == output_id, ToolOutputRow.session_id == session_id
        )
        async with self._reading() as session:
            return (await session.execute(query)).scalar_one_or_none()

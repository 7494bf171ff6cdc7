"""MCP tool lists: each server's last listing, one row per server, replaced as a whole."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Connection, Table, delete, insert, select

from agent.tools.mcp.spec import McpToolInfo
from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import McpToolListRow, utcnow

tool_lists_table = cast(Table, McpToolListRow.__table__)


def _info(tool: dict[str, Any]) -> McpToolInfo:
    return McpToolInfo(tool["name"], tool.get("description", ""), tool.get("input_schema", {}))


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
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ],
            "updated_at": utcnow(),
        }

        def replace(connection: Connection) -> None:
            connection.execute(delete(McpToolListRow).where(McpToolListRow.server == server))
            connection.execute(insert(tool_lists_table), values)

        await self._write(replace)

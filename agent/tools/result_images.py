"""The port through which tools hand images to the model: the session's rule and the host's store.

A tool result may carry images (an MCP server's image blocks). A model that sees images gets them
as image parts, the same attachment parts as a user's photos (:mod:`agent.attachments`): the
bytes kept once in the host's blob store, the stored message holding only the reference. The
host implements this port (the gateway's media store); the agent never reads the store itself.
"""

from __future__ import annotations

from typing import Any, Protocol


class ResultImages(Protocol):
    """How one session takes the images of tool results."""

    def shown(self) -> bool:
        """Whether the session's model sees images now (else images stay placeholders)."""

    def part(self, data: bytes, mime_type: str) -> dict[str, Any] | None:
        """An attachment part for the image (checked, fitted to the API's limits, its bytes
        kept); None when it is not an image that can be read or kept (a placeholder stands
        in)."""

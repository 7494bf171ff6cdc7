"""A stdio server's stderr, read line by line into a DEBUG logger instead of the daemon's own
stderr: a chatty or failing server cannot flood the daemon's output, and what it prints (which
may echo its arguments or secrets) never reaches INFO."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import TextIO

STDERR_LOGGER = "agent.tools.mcp.server"
"""Parent of the per-server loggers (``agent.tools.mcp.server.<name>``)."""
DRAIN_SECONDS = 1.0
"""How long closing waits for the last lines once the server is gone."""
MAX_LINE_BYTES = 4096
"""A longer line is logged cut (a server printing a blob must not build one huge record)."""


@contextlib.asynccontextmanager
async def stderr_logged(server: str) -> AsyncIterator[TextIO]:
    """A file to give the child as its stderr; each line it writes is logged at DEBUG."""
    read_fd, write_fd = os.pipe()
    writer = os.fdopen(write_fd, "w")
    stream = asyncio.StreamReader(limit=MAX_LINE_BYTES * 4)
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb")
    )
    reader = asyncio.create_task(_log_lines(logging.getLogger(f"{STDERR_LOGGER}.{server}"), stream))
    try:
        yield writer
    finally:
        writer.close()  # the child's copy closes when it exits: then the reader sees the end
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), DRAIN_SECONDS)
        reader.cancel()
        transport.close()


async def _log_lines(log: logging.Logger, stream: asyncio.StreamReader) -> None:
    while True:
        try:
            line = await stream.readline()
        except ValueError:  # a line past the reader's limit: skip what is buffered
            line = await stream.read(MAX_LINE_BYTES)
        if not line:
            return
        log.debug("%s", line[:MAX_LINE_BYTES].decode(errors="replace").rstrip())

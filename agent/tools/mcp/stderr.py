"""A stdio server's stderr, read line by line into a DEBUG logger instead of the daemon's own
stderr: a chatty or failing server cannot flood the daemon's output, and what it prints (which
may echo its arguments or secrets) never reaches INFO. Its last lines, secrets masked, are kept
in the attempt's :class:`~agent.tools.mcp.watch.TransportWatch` to show why it failed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Iterable
from typing import TextIO

from agent.tools.mcp.redact import redacted, shortened
from agent.tools.mcp.watch import TransportWatch

STDERR_LOGGER = "agent.tools.mcp.server"
"""Parent of the per-server loggers (``agent.tools.mcp.server.<name>``)."""
DRAIN_SECONDS = 1.0
"""How long closing waits for the last lines once the server is gone."""
MAX_LINE_BYTES = 4096
"""A longer line is logged cut (a server printing a blob must not build one huge record)."""
KEPT_LINE_CHARS = 300
"""A kept stderr line (shown in ``hermes mcp list``) is cut to this length."""


@contextlib.asynccontextmanager
async def stderr_logged(
    server: str, watch: TransportWatch, secrets: Iterable[str] = ()
) -> AsyncIterator[TextIO]:
    """A file to give the child as its stderr; each line it writes is logged at DEBUG and the
    last ones kept in ``watch``, ``secrets`` masked. Close it once the child has it: the
    reader then ends when the child exits."""
    read_fd, write_fd = os.pipe()
    writer = os.fdopen(write_fd, "w")
    stream = asyncio.StreamReader(limit=MAX_LINE_BYTES * 4)
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb")
    )
    log = logging.getLogger(f"{STDERR_LOGGER}.{server}")
    reader = asyncio.create_task(_log_lines(log, stream, watch, tuple(secrets)))
    try:
        yield writer
    finally:
        writer.close()  # the child's copy closes when it exits: then the reader sees the end
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), DRAIN_SECONDS)
        reader.cancel()
        transport.close()


async def _log_lines(
    log: logging.Logger,
    stream: asyncio.StreamReader,
    watch: TransportWatch,
    secrets: tuple[str, ...],
) -> None:
    while True:
        try:
            line = await stream.readline()
        except ValueError:  # a line past the reader's limit: skip what is buffered
            line = await stream.read(MAX_LINE_BYTES)
        if not line:
            return
        text = redacted(line[:MAX_LINE_BYTES].decode(errors="replace").rstrip(), secrets)
        if text:
            watch.stderr_tail.append(shortened(text, KEPT_LINE_CHARS))
        log.debug("%s", text)

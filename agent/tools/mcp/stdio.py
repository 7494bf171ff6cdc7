"""The stdio transport: the server as a child process exchanging JSON-RPC lines on its
stdin and stdout, watched while it runs.

The SDK's own transport hides the process; this one keeps it, so a server that exits while
idle is noticed at once with its exit code (:class:`~agent.tools.mcp.watch.TransportWatch`),
and a line on stdout that is not an MCP message (a banner, a debug print) is ignored and
counted, with one WARNING per server showing a short sample, secrets masked.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp import types
from mcp.client._transport import TransportStreams
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from agent.tools.mcp.redact import redacted, shortened
from agent.tools.mcp.spec import McpServerSpec
from agent.tools.mcp.stderr import stderr_logged
from agent.tools.mcp.watch import TransportWatch

log = logging.getLogger(__name__)

EXIT_GRACE_SECONDS = 2.0
"""After stdin is closed, how long a server has to exit before its process group is killed."""
EXIT_NOTICE_SECONDS = 1.0
"""How long a server that closed its stdout has to exit before it is stopped like a live one."""
JUNK_SAMPLE_CHARS = 80
"""How much of the first non-MCP stdout line the warning shows."""


def spec_secrets(spec: McpServerSpec) -> tuple[str, ...]:
    """The values of a server's spec that are secrets (its env, headers, and those the host
    found in its arguments and URL)."""
    return (*spec.env.values(), *spec.headers.values(), *spec.secrets)


@contextlib.asynccontextmanager
async def stdio_transport(
    spec: McpServerSpec, watch: TransportWatch
) -> AsyncIterator[TransportStreams]:
    """Start the server's process and yield the session's streams; stop it on exit (stdin
    closed, then its process group killed after :data:`EXIT_GRACE_SECONDS`)."""
    assert spec.command is not None
    secrets = spec_secrets(spec)
    async with stderr_logged(spec.name, watch, secrets) as errlog:
        process = await anyio.open_process(
            [spec.command, *spec.args],
            env=get_default_environment() | spec.env,
            stderr=errlog,
            cwd=spec.cwd,
            start_new_session=True,
        )
        errlog.close()  # the child has its copy: its stderr ends when it exits
        received, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, to_send = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read_stdout, spec.name, process, received, watch, secrets)
            tasks.start_soon(_write_stdin, process, to_send)
            tasks.start_soon(_watch_exit, process, watch)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    if watch.stdout_ended:  # the server is exiting: its code is the cause
                        await _note_exit(process, watch)
                    await _stop(process)
                tasks.cancel_scope.cancel()


async def _read_stdout(
    server: str,
    process: anyio.abc.Process,
    received: MemoryObjectSendStream[SessionMessage | Exception],
    watch: TransportWatch,
    secrets: tuple[str, ...],
) -> None:
    assert process.stdout is not None
    buffer = ""
    async with received:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in TextReceiveStream(process.stdout, errors="replace"):
                *lines, buffer = (buffer + chunk).split("\n")
                for line in lines:
                    message = _parsed(server, line, watch, secrets)
                    if message is not None:
                        await received.send(message)
            watch.stdout_ended = True


def _parsed(
    server: str, line: str, watch: TransportWatch, secrets: tuple[str, ...]
) -> SessionMessage | None:
    """The line's message; None for a blank line or junk (counted, the first one warned of)."""
    if not line.strip():
        return None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        watch.junk_lines += 1
        if watch.junk_lines == 1:
            sample = shortened(redacted(line.strip(), secrets), JUNK_SAMPLE_CHARS)
            log.warning(
                "MCP server %s prints lines that are not MCP messages on stdout (ignored, "
                "counted in `hermes mcp list`); the first: %r",
                server,
                sample,
            )
        return None


async def _write_stdin(
    process: anyio.abc.Process, to_send: anyio.abc.ObjectReceiveStream[SessionMessage]
) -> None:
    assert process.stdin is not None
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with to_send:
            async for message in to_send:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((data + "\n").encode())


async def _watch_exit(process: anyio.abc.Process, watch: TransportWatch) -> None:
    """Note the exit code as soon as the process exits (a call or not)."""
    watch.exited(await process.wait())


async def _note_exit(process: anyio.abc.Process, watch: TransportWatch) -> None:
    """After the server closed its stdout, wait briefly for its exit code (the session may
    have seen the closed stream first)."""
    with anyio.move_on_after(EXIT_NOTICE_SECONDS):
        code = await process.wait()
        if watch.exit_code is None:
            watch.exited(code)


async def _stop(process: anyio.abc.Process) -> None:
    if process.returncode is not None:
        return
    assert process.stdin is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    with anyio.move_on_after(EXIT_GRACE_SECONDS):
        await process.wait()
    if process.returncode is None:
        await terminate_posix_process_tree(process, EXIT_GRACE_SECONDS)  # type: ignore[arg-type]

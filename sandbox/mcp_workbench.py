"""A tool-heavy MCP server for the benchmarks: files, commands and pages of known sizes.

Written with the SDK's own server API and run as a stdio child
(``python -m sandbox.mcp_workbench WORLD.json``), it offers what an assistant that works on a
project uses all day: ``read_file(path)``, ``edit_file(path, new_text)``, ``run_command(command)``
and ``fetch_page(url)``.
The world file names every path, command and URL a replay will ask for and the size of its
output in tokens (the emulator's 4 characters a token); the output itself is deterministic text
of that size, made from the argument (the same argument always gives the same output, in any
process). Anything not in the world is an error result, as a missing file would be.

    {"read_file": {"/srv/project/src/cache.py": 2400}, "run_command": {...}, "fetch_page": {...}}
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from sandbox.anthropic_prompt import CHARS_PER_TOKEN

TOOLS = ("read_file", "edit_file", "run_command", "fetch_page")
_WORDS = (
    "cache session window token prefix request reply budget summary context store queue "
    "worker record message thread channel model answer detail signal limit index value "
    "config server client handler retry timeout error result output input parse render "
    "build test check deploy update migrate backup restore report metric trace span"
).split()

server = MCPServer("workbench")
_world: dict[str, dict[str, int]] = {tool: {} for tool in TOOLS}


def output_text(tool: str, argument: str, tokens: int) -> str:
    """The deterministic output of ``tool`` for ``argument``: about ``tokens`` tokens."""
    rng = random.Random(hashlib.sha256(f"{tool}\0{argument}".encode()).digest())
    target = tokens * CHARS_PER_TOKEN
    lines: list[str] = []
    length = 0
    number = 0
    while length < target:
        number += 1
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12)))
        if tool in ("read_file", "edit_file"):
            line = f"{number:5d}  {'    ' * rng.randint(0, 3)}{words.replace(' ', '_', 1)}()"
        elif tool == "run_command":
            line = f"[{number:05d}] {rng.choice(('INFO', 'INFO', 'DEBUG', 'WARN'))} {words}"
        else:
            line = words.capitalize() + "."
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)[:target]


def _output(tool: str, argument: str) -> str:
    tokens = _world[tool].get(argument)
    if tokens is None:
        raise ValueError(f"{tool}: nothing at {argument!r}")
    return output_text(tool, argument, tokens)


@server.tool()
def read_file(path: str) -> str:
    """Read a file of the project (its text, with line numbers)."""
    return _output("read_file", path)


@server.tool()
def edit_file(path: str, new_text: str) -> str:
    """Replace a file's text with ``new_text``; returns the edited part, with line numbers."""
    del new_text  # the world says what the edited part looks like
    return _output("edit_file", path)


@server.tool()
def run_command(command: str) -> str:
    """Run a shell command in the project and return its output."""
    return _output("run_command", command)


@server.tool()
def fetch_page(url: str) -> str:
    """Fetch a web page and return its readable text."""
    return _output("fetch_page", url)


def main(argv: list[str]) -> None:
    """Load the world file named by the only argument, then serve over stdio."""
    if len(argv) != 1:
        sys.exit("usage: python -m sandbox.mcp_workbench WORLD.json")
    loaded = json.loads(Path(argv[0]).read_text())
    for tool in TOOLS:
        _world[tool] = {str(k): int(v) for k, v in loaded.get(tool, {}).items()}
    server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])

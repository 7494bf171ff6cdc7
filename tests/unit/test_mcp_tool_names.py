"""Tool names and schemas every provider takes, the secrets masked out of what servers print,
and the PNG repair, as pure functions."""

from __future__ import annotations

import re
import struct
import zlib

from agent.tools.mcp.names import model_tool_name
from agent.tools.mcp.redact import redacted
from agent.tools.mcp.spec import McpServerSpec
from agent.tools.registry import Tool, ToolRegistry
from agent.tools.tool_schemas import input_schema_problem, tool_name_problem
from gateway.media.png_chunks import PNG_SIGNATURE, without_bad_ancillary_chunks
from gateway.reports.tool_calls import tool_calls_table
from gateway.store.repository_tool_calls import ToolCallStats

EVERY_PROVIDER = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def test_a_valid_name_is_kept_as_server__tool() -> None:
    assert model_tool_name("notes", "read") == "notes__read"
    assert model_tool_name("everything", "get-sum") == "everything__get-sum"


def test_names_no_provider_takes_are_mapped_valid_unique_and_stable() -> None:
    dotted = model_tool_name("files", "files.read")
    long = model_tool_name("srv", "x" * 70)
    assert EVERY_PROVIDER.fullmatch(dotted) and dotted.startswith("files__files_read_")
    assert EVERY_PROVIDER.fullmatch(long) and len(long) == 64
    assert model_tool_name("files", "files.read") == dotted, "the same on every run"
    assert model_tool_name("files", "files/read") != dotted, "a hash keeps them apart"
    assert model_tool_name("srv", "x" * 70 + "y") != long
    assert EVERY_PROVIDER.fullmatch(model_tool_name("srv", "日本語 tool"))


def test_tool_names_and_schemas_a_provider_would_refuse_are_named() -> None:
    assert tool_name_problem("a.b") == "the name has characters outside [a-zA-Z0-9_-]"
    assert tool_name_problem("a" * 65) == "the name is longer than 64 characters"
    assert tool_name_problem("a" * 64) is None
    assert input_schema_problem({"type": "object"}) is None
    assert input_schema_problem({"type": "string"}) == 'its input schema\'s type is not "object"'
    assert input_schema_problem([]) == "its input schema is not a JSON object"
    assert input_schema_problem({"type": "object", "x": float("nan")}) is not None
    misspelt = {"type": "object", "properties": {"q": {"type": "strnig"}}}
    assert str(input_schema_problem(misspelt)).startswith(
        "its input schema is not valid JSON Schema (at properties/q/type: "
    )


async def _nothing(_args: dict[str, object]) -> str:
    return ""


def test_the_request_leaves_out_a_tool_a_provider_would_refuse_and_keeps_the_rest() -> None:
    good = Tool("good", "", {"type": "object"}, _nothing)
    bad_schema = Tool("bad_schema", "", {"type": "string"}, _nothing)
    bad_name = Tool("bad.name", "", {"type": "object"}, _nothing)
    registry = ToolRegistry([good, bad_schema, bad_name])
    assert [t["name"] for t in registry.schemas()] == ["good"]


def test_an_ask_entry_naming_no_listed_tool_makes_every_call_ask() -> None:
    spec = McpServerSpec("time", command="x", ask=("get_curent_time",), tools=("nope",))
    listed = ["get_current_time", "convert_time"]
    assert spec.asks("convert_time", listed), "in doubt, ask"
    assert spec.unknown_entries(listed) == {"ask": ["get_curent_time"], "tools": ["nope"]}
    exact = McpServerSpec("time", command="x", ask=("convert_time",))
    assert exact.asks("convert_time", listed) and not exact.asks("get_current_time", listed)
    assert exact.unknown_entries(listed) == {}


def test_secrets_are_masked_in_what_a_server_prints() -> None:
    line = "connect postgresql://app:pa55w0rd@db/x token=abc123 Authorization: Bearer zzz999"
    masked = redacted(line + " key sk-known-1234", secrets=["sk-known-1234"])
    for secret in ("pa55w0rd", "abc123", "zzz999", "sk-known-1234"):
        assert secret not in masked
    assert "postgresql://app:***@db/x" in masked


def _chunk(kind: bytes, body: bytes, crc: int | None = None) -> bytes:
    checksum = zlib.crc32(kind + body) if crc is None else crc
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", checksum)


def test_a_png_loses_only_its_ancillary_chunks_with_a_bad_checksum() -> None:
    header = _chunk(b"IHDR", b"\0" * 13)
    end = _chunk(b"IEND", b"")
    broken = PNG_SIGNATURE + header + _chunk(b"iCCP", b"profile", crc=1) + end
    assert without_bad_ancillary_chunks(broken) == PNG_SIGNATURE + header + end
    assert without_bad_ancillary_chunks(PNG_SIGNATURE + header + end) is None, "nothing to do"
    bad_header = PNG_SIGNATURE + _chunk(b"IHDR", b"\0" * 13, crc=1) + end
    assert without_bad_ancillary_chunks(bad_header) is None, "a bad critical chunk stays bad"
    assert without_bad_ancillary_chunks(b"GIF89a") is None


def test_the_tool_table_keeps_its_columns_with_long_mcp_tool_names() -> None:
    stats = [
        ToolCallStats("calculator", 2, 0, 0, 0, 0.5, 0.3),
        ToolCallStats("everything__get-annotated-message", 7, 1, 0, 0, 0.1, 0.1),
    ]
    header, *rows = tool_calls_table(stats)
    calls_end = header.index("calls") + len("calls")
    assert [row[:calls_end].split()[-1] for row in rows] == ["2", "7"]
    assert len({len(line) for line in [header, *rows]}) == 1, "every line as wide"

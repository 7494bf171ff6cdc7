"""The MCP SDK logs tool arguments and results at DEBUG and session ids at INFO: its loggers
stay at WARNING unless the user asks for DEBUG."""

from __future__ import annotations

import logging

import pytest

from gateway.config.schema import parse_config
from gateway.runtime.log_setup import configure_logging


@pytest.mark.parametrize(("level", "sdk_level"), [("INFO", "WARNING"), ("DEBUG", "DEBUG")])
def test_the_mcp_sdk_logs_at_warning_unless_the_log_is_at_debug(
    level: str, sdk_level: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp")  # put back after the test
    configure_logging(parse_config({"logging": {"level": level}}))
    assert logging.getLogger("mcp").level == getattr(logging, sdk_level)
    session_log = logging.getLogger("mcp.client.session")
    assert session_log.isEnabledFor(logging.INFO) == (level == "DEBUG")

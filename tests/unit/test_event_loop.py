"""Choosing the event loop: uvloop when available (auto or required), asyncio on request."""

from __future__ import annotations

import sys

import pytest

from gateway.config.schema import ConfigError, parse_config
from gateway.runtime import event_loop


async def loop_name_and(value: int) -> tuple[str, int]:
    return event_loop.running_loop_name(), value


def test_auto_runs_on_uvloop_where_it_is_installed() -> None:
    assert event_loop.run(loop_name_and(1), "auto") == ("uvloop", 1)
    assert event_loop.run(loop_name_and(2), "uvloop") == ("uvloop", 2)


def test_asyncio_runs_on_the_standard_loop() -> None:
    assert event_loop.run(loop_name_and(3), "asyncio") == ("asyncio", 3)


def test_auto_falls_back_to_asyncio_without_uvloop_and_requiring_it_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # makes "import uvloop" fail
    fallback = event_loop.run(loop_name_and(4), "auto")
    never_run = loop_name_and(5)
    with pytest.raises(ConfigError, match=r"gateway\.event_loop"):
        event_loop.run(never_run, "uvloop")

    assert fallback == ("asyncio", 4)
    assert never_run.cr_frame is None  # closed, not left pending


def test_the_event_loop_setting_rejects_unknown_loops() -> None:
    with pytest.raises(ConfigError, match="event_loop"):
        parse_config({"gateway": {"event_loop": "trio"}})
    assert parse_config({}).gateway.event_loop == "auto"

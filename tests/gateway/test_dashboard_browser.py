"""The dashboard in a real browser (Debian's headless Chromium driven by Selenium), served by
uvicorn over the store of the scripted night of ``test_dashboard``: nothing shows without the
token, the login link opens every page without a console error, the numbers are those of
``hermes usage``, the manual compaction is on its session's timeline, and the users page's
form stores an access decision. A screenshot of each page is saved under
``$HERMES_TEST_ARTEFACTS`` (default: the test's temporary folder), never committed. And the
same pages served by a running daemon (``dashboard.enabled``) with its platforms and MCP
server on the operations page.

Needs Debian's chromium and chromium-driver (``./dev.sh test`` installs them with apt); the
test fails, naming them, where they are missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from selenium import webdriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from gateway.config.schema import Config, database_url
from gateway.dashboard.app import create_app
from gateway.dashboard.auth import DashboardAuth
from gateway.dashboard.overview import CHART_DAYS
from gateway.dashboard.server import dashboard_context
from gateway.store.db import open_store
from gateway.store.repository import Repository
from gateway.users.access import day_start, usage_window
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE
from tests.gateway.test_dashboard import CAROL, TOKEN, night  # noqa: F401 - the fixture
from tests.gateway.test_dashboard_daemon import TOKEN as DAEMON_TOKEN
from tests.gateway.test_dashboard_daemon import (
    WAIT,
    daemon,
    daemon_config,  # noqa: F401 - the fixture
    until_served,
    url,
    with_dashboard,
)
from tests.gateway.test_mcp_tools import PID_ENV, mcp_config

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
BROWSER_GUARD_SECONDS = 60
MISSING_BROWSER = "install Debian's chromium and chromium-driver (./dev.sh test does)"
ARTEFACTS_ENV = "HERMES_TEST_ARTEFACTS"


@pytest.fixture
async def served(night: Config) -> AsyncIterator[tuple[str, Repository]]:  # noqa: F811
    """The dashboard on a free loopback port, in this test's event loop."""
    store = await open_store(database_url(night))
    repo = Repository(store)
    app = create_app(dashboard_context(night, repo, DashboardAuth(TOKEN)))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
                await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}", repo
    finally:
        server.should_exit = True
        await task
        await store.close()


CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # No calls home: this machine's network is closed, and a test must not wait on it.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture
def browser(tmp_path: Path) -> Any:
    assert CHROMIUM is not None and DRIVER is not None, MISSING_BROWSER
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    # A guard against a browser that hangs (never a measurement): fail, don't stall the suite.
    driver.set_page_load_timeout(BROWSER_GUARD_SECONDS)
    driver.set_script_timeout(BROWSER_GUARD_SECONDS)
    driver.set_window_size(1200, 1600)
    try:
        yield driver
    finally:
        driver.quit()


def _console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


async def test_the_dashboard_in_a_real_browser(
    served: tuple[str, Repository], browser: Any, tmp_path: Path
) -> None:
    base, repo = served
    shots = Path(os.environ.get(ARTEFACTS_ENV, tmp_path)) / "dashboard"
    shots.mkdir(parents=True, exist_ok=True)

    async def run(step: Callable[..., Any], *args: Any) -> Any:
        # Selenium blocks: run it beside the event loop that serves the pages.
        return await asyncio.to_thread(step, *args)

    def text(css: str) -> str:
        return str(browser.find_element("css selector", css).text)

    await run(browser.get, f"{base}/")
    assert "Not logged in" in await run(text, "body")
    await run(browser.get_log, "browser")  # the 401 itself is logged: not a page's error

    await run(browser.get, f"{base}/login?token={TOKEN}")
    assert browser.current_url == f"{base}/"
    today = await repo.spend_since(day_start())
    month_rows = await repo.usage_by("day", usage_window(CHART_DAYS))
    assert (await run(text, "#spent-today .value")) == f"${today:.4f}"
    assert (await run(text, "#cost-30d .value")) == f"${sum(r.cost_usd for r in month_rows):.4f}"
    assert len(browser.find_elements("css selector", "svg rect")) > 0
    await run(browser.save_screenshot, str(shots / "overview.png"))
    assert await run(_console_errors, browser) == []

    await run(browser.get, f"{base}/sessions")
    await run(browser.save_screenshot, str(shots / "sessions.png"))
    link = browser.find_element("css selector", "#sessions a")
    await run(link.click)
    triggers = [
        e.get_attribute("data-trigger")
        for e in browser.find_elements("css selector", "#compactions tr[data-trigger]")
    ]
    assert "manual" in triggers
    await run(browser.save_screenshot, str(shots / "session.png"))
    assert await run(_console_errors, browser) == []

    await run(browser.get, f"{base}/users")
    field = browser.find_element("css selector", "#decide input[name=user]")
    await run(field.send_keys, str(CAROL))
    await run(browser.find_element("css selector", "#decide button").click)
    # The click returns before the form's redirect has loaded: wait for the page it leads to.
    stored = expected_conditions.presence_of_element_located(("css selector", "#done"))
    await run(WebDriverWait(browser, BROWSER_GUARD_SECONDS).until, stored)
    assert "Stored: allow telegram:77" in await run(text, "#done")
    decisions = await repo.access_records()
    assert [(d.user_id, d.access, d.set_by) for d in decisions] == [
        (str(CAROL), "allow", "dashboard")
    ]
    await run(browser.save_screenshot, str(shots / "users.png"))

    await run(browser.get, f"{base}/operations")
    await run(browser.save_screenshot, str(shots / "operations.png"))
    assert await run(_console_errors, browser) == []
    assert sorted(p.name for p in shots.iterdir()) == [
        "operations.png",
        "overview.png",
        "session.png",
        "sessions.png",
        "users.png",
    ]


async def test_the_daemons_dashboard_in_a_real_browser(
    daemon_config: Config,  # noqa: F811
    telegram: TelegramEmulator,
    browser: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``dashboard.enabled``: the running daemon's pages, its platforms and MCP server on the
    operations page, without a console error."""
    monkeypatch.setenv(PID_ENV, str(tmp_path / "notes.pid"))
    config = with_dashboard(mcp_config(daemon_config), port=daemon_config.dashboard.port)
    shots = Path(os.environ.get(ARTEFACTS_ENV, tmp_path)) / "dashboard"
    shots.mkdir(parents=True, exist_ok=True)

    async def run(step: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(step, *args)

    def text(css: str) -> str:
        return str(browser.find_element("css selector", css).text)

    async with httpx.AsyncClient(timeout=WAIT) as client, daemon(config) as task:
        await until_served(client, url(config, "/"), task)
        telegram.push_message(ALICE, "hello from the browser test")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        await run(browser.get, url(config, f"/login?token={DAEMON_TOKEN}"))
        assert browser.current_url == url(config, "/")
        assert await run(_console_errors, browser) == []
        async with asyncio.timeout(WAIT):  # the MCP server connects on its own
            while True:
                await run(browser.get, url(config, "/operations"))
                if "ready" in await run(text, "#mcp tr[data-server=notes]"):
                    break
                await asyncio.sleep(0.05)
        assert "connected" in await run(text, "#platforms tr[data-platform=telegram]")
        assert "running (pid" in await run(text, "#daemon")
        await run(browser.save_screenshot, str(shots / "operations-daemon.png"))
        assert await run(_console_errors, browser) == []

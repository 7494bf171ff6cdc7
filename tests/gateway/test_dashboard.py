"""``hermes dashboard`` over the store of a real scripted run (the daemon core against the
Telegram and Anthropic emulators): the pages show the numbers ``hermes usage`` and ``/usage``
compute, nothing is served without the token, an allow/deny POST stores the same decision
as ``/allow`` and needs its CSRF token, and ``/metrics`` parses and agrees with the database.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from markupsafe import escape
from prometheus_client.parser import text_string_to_metric_families

from agent.types import ToolCallRecord
from gateway.config.prices import chat_model_info
from gateway.config.schema import Config
from gateway.dashboard.app import create_app
from gateway.dashboard.auth import DashboardAuth
from gateway.dashboard.metrics import EPOCH
from gateway.dashboard.overview import CHART_DAYS
from gateway.dashboard.server import dashboard_context
from gateway.reports.usage import policy_savings, spend
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.store.db import open_store
from gateway.store.job_records import NewJob
from gateway.store.repository import Repository
from gateway.users.access import day_start, month_start, usage_window
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import (
    ALICE,
    MODEL_KEY_ENV,
    gateway_config,
    message_key,
    settled_inbound,
)

TOKEN = "operator-token-for-tests"
CAROL = 77  # not on the allowlist: refused
MODEL_KEY = "sk-test-model-key-0123456789"
"""The model's key, which Alice pastes into the chat: no page may show it."""
FILLER = "We went through the plan for the billing migration step by step again. " * 36
WINDOW = 16_000
"""A small window, so that /compress has a head to summarise."""
NOTES = 12


async def _send(gateway: Gateway, telegram: TelegramEmulator, user: int, text: str) -> None:
    update = telegram.push_message(user, text, username=f"user{user}", first_name="U")
    await settled_inbound(gateway, "telegram", message_key(update))


@pytest.fixture
async def night(
    tmp_path: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> Config:
    """A short scripted night: Alice talks, compacts by hand, talks again; Carol is refused;
    an update that is no message is quarantined."""
    monkeypatch.setenv(MODEL_KEY_ENV, MODEL_KEY)
    config = gateway_config(
        tmp_path,
        anthropic,
        telegram=telegram,
        telegram_settings={"allowed_users": [ALICE], "admin_users": [ALICE]},
        model_settings={"context_length": WINDOW, "max_tokens": 1024},
    )
    async with open_app(config) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            for i in range(NOTES):
                text = f"note {i}: fact #{i} is {i * 7919}. {FILLER}"
                await _send(gateway, telegram, ALICE, text)
            await _send(gateway, telegram, ALICE, "/compress")
            await _send(gateway, telegram, ALICE, f"what was fact #3? my key is {MODEL_KEY}")
            await _send(gateway, telegram, CAROL, "hello?")
            telegram.push_raw_update("message", "not a message")
            async with asyncio.timeout(10):
                while not await gateway.app.repo.count_dead_letters():  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        finally:
            await gateway.stop(grace_seconds=2.0)
    return config


@asynccontextmanager
async def dashboard(config: Config) -> AsyncIterator[tuple[httpx.AsyncClient, Repository]]:
    """A client of the dashboard over the run's store (not logged in yet)."""
    from gateway.config.schema import database_url

    store = await open_store(database_url(config))
    repo = Repository(store)
    context = dashboard_context(config, repo, DashboardAuth(TOKEN))
    transport = httpx.ASGITransport(app=create_app(context))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client, repo
    finally:
        await store.close()


async def _login(client: httpx.AsyncClient) -> None:
    response = await client.get("/login", params={"token": TOKEN})
    assert response.status_code == 303
    assert "hermes_dashboard" in client.cookies


def _cell(html: str, element_id: str) -> str:
    """The text of the ``.value`` of the card ``element_id``."""
    match = re.search(rf'id="{element_id}".*?class="value[^"]*">([^<]*)<', html, re.S)
    assert match, element_id
    return match.group(1).strip()


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert match
    return match.group(1)


async def test_every_page_needs_the_token(night: Config) -> None:
    async with dashboard(night) as (client, _):
        for path in ("/", "/sessions", "/sessions/1", "/users", "/operations", "/metrics"):
            response = await client.get(path)
            assert response.status_code == 401, path
        assert (await client.get("/login", params={"token": "wrong"})).status_code == 401
        refused = await client.post(
            "/users/access", data={"platform": "telegram", "user": str(CAROL), "access": "allow"}
        )
        assert refused.status_code == 401
        bearer = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 200
        await _login(client)
        assert (await client.get("/")).status_code == 200


async def test_overview_shows_the_numbers_of_hermes_usage(night: Config) -> None:
    async with dashboard(night) as (client, repo):
        await _login(client)
        html = (await client.get("/")).text
        by_day = await repo.usage_by("day", usage_window(CHART_DAYS))
        today = await repo.spend_since(day_start())
        month = await repo.spend_since(month_start())
        groups = [g.group for g in await repo.usage_groups_by_day(usage_window(CHART_DAYS))]
        buckets = spend(groups, chat_model_info(night, night.model.name))
        savings = policy_savings(await repo.compactions_since(usage_window(CHART_DAYS)))

    assert by_day and today > 0
    assert _cell(html, "spent-today") == f"${today:.4f}"
    assert _cell(html, "spent-month") == f"${month:.4f}"
    assert _cell(html, "cost-30d") == f"${sum(r.cost_usd for r in by_day):.4f}"
    assert _cell(html, "calls") == str(sum(r.calls for r in by_day))
    assert _cell(html, "policy-saving") == f"${savings.net_usd:.4f}"
    for row in by_day:
        day_row = re.search(rf'data-day="{row.group}">.*?class="num cost">([^<]*)<', html, re.S)
        assert day_row and day_row.group(1) == f"${row.cost_usd:.4f}"
    for bucket, usd in buckets.items():
        assert f'data-bucket="{bucket}">${usd:.4f}<' in html
    assert abs(buckets.total - sum(r.cost_usd for r in by_day)) < 1e-9
    assert html.count("<svg") == 2 and "<rect" in html and "<script" not in html
    assert TOKEN not in html and "test-key" not in html


async def test_sessions_page_searches_and_a_session_shows_its_compactions(night: Config) -> None:
    async with dashboard(night) as (client, repo):
        await _login(client)
        listed = await repo.search_sessions("")
        alice = next(s for s in listed if s.user_id == str(ALICE))
        page = (await client.get("/sessions", params={"q": "TELEGRAM"})).text
        nothing = (await client.get("/sessions", params={"q": "no-such-session"})).text
        session_html = (await client.get(f"/sessions/{alice.id}")).text
        compactions = await repo.list_compactions(alice.id)
        messages = await repo.all_messages(alice.id)
        totals = await repo.usage_totals(alice.id)
        summary_calls = await repo.summary_costs(alice.id)
        missing = await client.get("/sessions/9999")

    assert f'data-session="{alice.id}"' in page and f"${alice.cost_usd:.4f}" in page
    assert "data-session=" not in nothing
    assert compactions, "the /compress left a record"
    for compaction in compactions:
        assert f'data-trigger="{compaction.trigger}" data-outcome="{compaction.outcome}"' in (
            session_html
        )
    assert {c.trigger for c in compactions} >= {"manual", "agent"}
    summarized = [c for c in compactions if c.outcome == "summarized"]
    assert summarized and all(c.summary for c in summarized)
    for compaction in summarized:
        assert str(escape(compaction.summary or ""))[:200] in session_html
    assert any(not m.in_context for m in messages)
    assert session_html.count('class="compacted"') == sum(not m.in_context for m in messages)
    assert session_html.count('class="in-context"') == sum(m.in_context for m in messages)
    assert _cell(session_html, "session-cost") == f"${totals.cost_usd:.4f}"
    assert any(MODEL_KEY in str(m.content) for m in messages), "stored as said"
    assert MODEL_KEY not in session_html and "my key is ***" in session_html
    day_costs = re.findall(r'id="session-days".*?</table>', session_html, re.S)[0]
    shown = re.findall(r'class="num cost">\$([0-9.]+)<', day_costs)
    assert shown and abs(sum(map(float, shown)) - totals.cost_usd) < 1e-3
    summary_cells = re.findall(r'class="num summary-cost">\$([0-9.]+)<', session_html)
    assert len(summary_cells) == len(compactions)
    assert summary_calls and sum(map(float, summary_cells)) > 0
    paid_before_last = sum(cost for at, cost in summary_calls if at <= compactions[-1].created_at)
    assert abs(sum(map(float, summary_cells)) - paid_before_last) < 1e-3
    assert missing.status_code == 404


async def test_allow_and_deny_store_the_decision_and_need_the_csrf_token(night: Config) -> None:
    async with dashboard(night) as (client, repo):
        await _login(client)
        users_html = (await client.get("/users")).text
        csrf = _csrf(users_html)
        form = {"platform": "telegram", "user": str(CAROL), "access": "allow"}
        without = await client.post("/users/access", data=form)
        forged = await client.post("/users/access", data={**form, "csrf": "0" * 64})
        before = await repo.access_records()
        allowed = await client.post("/users/access", data={**form, "csrf": csrf})
        after_allow = await repo.access_records()
        denied = await client.post("/users/access", data={**form, "access": "deny", "csrf": csrf})
        after_deny = await repo.access_records()
        totals = await repo.usage_by("user", usage_window(CHART_DAYS))

    assert without.status_code == 403 and forged.status_code == 403 and before == []
    assert allowed.status_code == 303
    assert [(r.user_id, r.access, r.set_by) for r in after_allow] == [
        (str(CAROL), "allow", "dashboard")
    ]
    assert denied.status_code == 303
    assert [(r.user_id, r.access) for r in after_deny] == [(str(CAROL), "deny")]
    for row in totals:
        assert f'data-user="{row.group}">' in users_html
        assert f"${row.cost_usd:.4f}" in users_html


async def test_users_page_lists_tool_calls_per_user_and_tool(night: Config) -> None:
    alice = f"telegram:{ALICE}"
    async with dashboard(night) as (client, repo):
        now = datetime.now(UTC)
        for outcome, seconds in (("ok", 0.25), ("error", 1.5), ("denied", None)):
            call = ToolCallRecord("notes__read", outcome, seconds)
            await repo.record_tool_call(1, call, started_at=now, user_key=alice)
        await _login(client)
        html = (await client.get("/users")).text

    row = re.search(rf'data-user-tool="{alice} notes__read">(.*?)</tr>', html, re.S)
    assert row, html
    cells = re.findall(r">([^<]*)</td>", row.group(1))
    assert cells == [alice, "notes__read", "3", "1", "1", "0", "1.750 s", "1.500 s"]


async def test_metrics_parse_and_agree_with_the_database(night: Config) -> None:
    async with dashboard(night) as (client, repo):
        await _login(client)
        response = await client.get("/metrics")
        groups = [g.group for g in await repo.usage_groups_by_day(EPOCH)]
        buckets = spend(groups, chat_model_info(night, night.model.name))
    assert response.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }

    database = sqlite3.connect(night.database.url.removeprefix("sqlite+aiosqlite:///"))
    try:

        def scalar(sql: str) -> float:
            return float(database.execute(sql).fetchone()[0] or 0)

        received = scalar("select count(*) from inbound where platform = 'telegram'")
        answered = scalar("select count(*) from inbound where status = 'done'")
        refused = scalar("select count(*) from inbound where status = 'refused'")
        output = scalar("select sum(output_tokens) from api_usage")
        reads = scalar("select sum(cache_read_tokens) from api_usage")
        cost = scalar("select sum(cost_usd) from api_usage")
        manual = scalar("select count(*) from compactions where trigger = 'manual'")
        quarantined = scalar("select count(*) from dead_letters")
    finally:
        database.close()

    platform = (("platform", "telegram"),)
    assert samples[("hermes_messages_received_total", platform)] == received > 0
    assert samples[("hermes_messages_answered_total", platform)] == answered > 0
    assert samples[("hermes_messages_refused_total", platform)] == refused == 1
    assert samples[("hermes_tokens_total", (("kind", "output"),))] == output
    assert samples[("hermes_tokens_total", (("kind", "cache_read"),))] == reads
    bucket_sum = sum(v for (name, _), v in samples.items() if name == "hermes_cost_usd_total")
    assert abs(bucket_sum - cost) < 1e-9
    assert abs(samples[("hermes_cost_usd_total", (("bucket", "output"),))] - buckets.output) < 1e-12
    manual_seen = sum(
        v
        for (name, labels), v in samples.items()
        if name == "hermes_compactions_total" and ("trigger", "manual") in labels
    )
    assert manual_seen == manual >= 1
    assert samples[("hermes_quarantined_updates", ())] == quarantined


async def test_operations_shows_quarantined_updates_and_deletes_one_with_csrf(
    night: Config,
) -> None:
    async with dashboard(night) as (client, repo):
        await _login(client)
        html = (await client.get("/operations")).text
        [letter] = await repo.list_dead_letters()
        without = await client.post(f"/quarantine/{letter.id}/delete")
        kept = await repo.count_dead_letters()
        deleted = await client.post(f"/quarantine/{letter.id}/delete", data={"csrf": _csrf(html)})
        left = await repo.count_dead_letters()
        again = await client.post(f"/quarantine/{letter.id}/delete", data={"csrf": _csrf(html)})
        revisions = await repo.schema_revisions()

    assert f'data-letter="{letter.id}"' in html and "not a message" in html
    assert revisions and all(revision in html for revision in revisions)
    assert without.status_code == 403 and kept == 1
    assert deleted.status_code == 303 and left == 0
    assert again.status_code == 404


async def test_operations_lists_every_users_pending_jobs_and_not_the_finished_ones(
    night: Config,
) -> None:
    async with dashboard(night) as (client, repo):
        due = datetime(2030, 1, 7, 6, 0, tzinfo=UTC)
        daily = await repo.add_job(
            job_for("42", "Summarise the overnight news", "0 7 * * *", due), max_per_user=10
        )
        once = await repo.add_job(job_for("77", "Water the plants", None, due), max_per_user=10)
        await repo.cancel_job("telegram", "77", once.id)
        await _login(client)
        html = (await client.get("/operations")).text

    assert f'data-job="{daily.id}"' in html
    assert "0 7 * * * (Europe/Berlin)" in html and "2030-01-07 06:00:00" in html
    assert "Summarise the overnight news" in html
    assert f'data-job="{once.id}"' not in html  # cancelled: no longer pending


def job_for(user_id: str, prompt: str, cron: str | None, due: datetime) -> NewJob:
    """A job of ``user_id`` in their private Telegram chat."""
    return NewJob(
        platform="telegram",
        user_id=user_id,
        chat_id=user_id,
        thread_id=None,
        chat_type="private",
        session_key=f"telegram:{user_id}",
        prompt=prompt,
        kind="cron" if cron else "once",
        cron=cron,
        time_zone="Europe/Berlin",
        next_run_at=due,
    )

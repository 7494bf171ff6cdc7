"""The dashboard's web application: routes, each reading the store and rendering a template.

``create_app`` builds a Starlette app over a :class:`~gateway.store.ports.DashboardStore`; it
serves the operators' pages, the login link and ``/metrics``, all behind
:class:`~gateway.dashboard.auth.RequireLogin`. The one change it makes is an access decision,
stored exactly as ``/allow``, ``/deny`` and ``hermes users`` store it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from markupsafe import Markup
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from agent.model_table import ModelInfo
from gateway.commands.users import parse_user
from gateway.config.schema import LimitsSettings
from gateway.dashboard import charts
from gateway.dashboard.auth import COOKIE, CSRF_FIELD, DashboardAuth, RequireLogin
from gateway.dashboard.metrics import EPOCH, metrics_text
from gateway.dashboard.overview import CHART_DAYS, build_overview, per_day
from gateway.reports.usage import BUCKET_LABELS, policy_savings, spend
from gateway.store.ports import DashboardStore
from gateway.store.records import CompactionRecord, UsageTotals
from gateway.users.access import day_start, usage_window

TEMPLATES = Path(__file__).parent / "templates"
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SET_BY = "dashboard"
"""Who an access decision made on the users page is recorded as set by."""
SESSION_SEARCH_LIMIT = 200
DISTRIBUTION = "hermes-gateway"


def _version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


@dataclass(frozen=True, slots=True)
class ServiceState:
    """A platform connection or an MCP server as the running daemon sees it now."""

    name: str
    state: str
    """``connected``, ``stopped``, or the MCP connection's own state (``starting``, ...)."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DashboardContext:
    """What the pages need besides the store: the limits and the model that prices the
    buckets (the configured chat model, as ``hermes sessions usage`` prices them)."""

    repo: DashboardStore
    limits: LimitsSettings
    main: ModelInfo
    platforms: tuple[str, ...]
    auth: DashboardAuth
    daemon_pid: Callable[[], int | None] = lambda: None
    """The running gateway's process id for this data, None when none runs."""
    redact: Callable[[str], str] = lambda text: text
    """Masks the configured secrets in stored text a page shows (a pasted key, say)."""
    daemon_metrics: CollectorRegistry | None = None
    """The running daemon's own series, when the daemon serves the dashboard."""
    platform_states: Callable[[], Sequence[ServiceState]] | None = None
    """The daemon's platform adapters now (only when the daemon serves the dashboard)."""
    mcp_states: Callable[[], Sequence[ServiceState]] | None = None
    """The daemon's MCP servers now (only when the daemon serves the dashboard)."""


def _usd(value: float) -> str:
    return f"${value:.4f}"


def _content_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


class _Pages:
    """The route handlers, over one :class:`DashboardContext`."""

    def __init__(self, context: DashboardContext) -> None:
        self.ctx = context
        self.templates = Jinja2Templates(directory=TEMPLATES)
        self.templates.env.filters["usd"] = _usd
        self.templates.env.filters["content_text"] = _content_text
        self.templates.env.filters["redact"] = context.redact

    def _render(self, request: Request, name: str, **values: Any) -> Response:
        session = self.ctx.auth.session_of(request)
        csrf = self.ctx.auth.csrf_token(session) if session else ""
        return self.templates.TemplateResponse(
            request, name, {"csrf": csrf, "csrf_field": CSRF_FIELD, **values}
        )

    async def login(self, request: Request) -> Response:
        if not self.ctx.auth.check_token(request.query_params.get("token")):
            return PlainTextResponse("Wrong or missing token.\n", status_code=401)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, self.ctx.auth.open_session(), httponly=True, samesite="strict")
        return response

    async def overview(self, request: Request) -> Response:
        view = await build_overview(self.ctx.repo, self.ctx.limits, self.ctx.main)
        days = [d.day for d in view.days]
        cost_chart = charts.stacked_bars(
            f"Cost per day by bucket, last {CHART_DAYS} days",
            days,
            [
                charts.Series(label, [getattr(d.spend, bucket) for d in view.days])
                for bucket, label in BUCKET_LABELS.items()
            ],
        )
        hit_chart = charts.line(
            f"Cache hit rate per day, last {CHART_DAYS} days",
            days,
            [d.totals.cache_hit_rate if d.totals.prompt_tokens else None for d in view.days],
        )
        return self._render(
            request,
            "overview.html",
            view=view,
            bucket_labels=BUCKET_LABELS,
            legend=charts.legend(list(BUCKET_LABELS.values())),
            cost_chart=Markup(cost_chart),
            hit_chart=Markup(hit_chart),
        )

    async def sessions(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        listed = await self.ctx.repo.search_sessions(query, limit=SESSION_SEARCH_LIMIT)
        return self._render(request, "sessions.html", sessions=listed, query=query)

    async def session(self, request: Request) -> Response:
        session_id = int(request.path_params["session_id"])
        record = await self.ctx.repo.get_session(session_id)
        if record is None:
            return PlainTextResponse(f"No session #{session_id}.\n", status_code=404)
        groups = await self.ctx.repo.usage_breakdown(session_id)
        compactions = await self.ctx.repo.list_compactions(session_id)
        by_day = await self.ctx.repo.usage_groups_by_day(EPOCH, session_id)
        days = sorted({g.day for g in by_day})
        return self._render(
            request,
            "session.html",
            session=record,
            messages=await self.ctx.repo.all_messages(session_id),
            compactions=compactions,
            summary_costs=summary_cost_per_compaction(
                compactions, await self.ctx.repo.summary_costs(session_id)
            ),
            totals=sum((g.totals for g in groups), UsageTotals()),
            costs=spend(groups, self.ctx.main),
            savings=policy_savings(compactions),
            bucket_labels=BUCKET_LABELS,
            days=per_day([(g.day, g.group) for g in by_day], self.ctx.main, days),
        )

    async def users(self, request: Request) -> Response:
        since = usage_window(CHART_DAYS)
        return self._render(
            request,
            "users.html",
            totals=await self.ctx.repo.usage_by("user", since),
            today={
                row.group: row.cost_usd for row in await self.ctx.repo.usage_by("user", day_start())
            },
            per_day=await self.ctx.repo.spend_by_user_and_day(since),
            tool_calls=await self.ctx.repo.tool_call_stats(since, per_user=True),
            decisions=await self.ctx.repo.access_records(),
            limits=self.ctx.limits,
            platforms=self.ctx.platforms,
            days=CHART_DAYS,
            message=request.query_params.get("done", ""),
        )

    async def set_access(self, request: Request) -> Response:
        form = await request.form()
        csrf = form.get(CSRF_FIELD)
        if not self.ctx.auth.check_csrf(request, csrf if isinstance(csrf, str) else None):
            return PlainTextResponse("Missing or wrong CSRF token.\n", status_code=403)
        platform, user, access = (str(form.get(k, "")) for k in ("platform", "user", "access"))
        parsed = parse_user(user)
        if platform not in self.ctx.platforms or access not in ("allow", "deny") or not parsed:
            return PlainTextResponse(
                "Give a platform, a user id or @username, and allow or deny.\n", status_code=400
            )
        user_id, username = parsed
        await self.ctx.repo.set_access(
            platform,
            user_id=user_id,
            username=username,
            access="allow" if access == "allow" else "deny",
            set_by=SET_BY,
        )
        return RedirectResponse(f"/users?done={access}+{platform}:{user}", status_code=303)

    async def operations(self, request: Request) -> Response:
        revisions = await self.ctx.repo.schema_revisions()
        return self._render(
            request,
            "operations.html",
            version=_version(),
            revisions=sorted(revisions or ()),
            daemon_pid=self.ctx.daemon_pid(),
            platform_states=self.ctx.platform_states() if self.ctx.platform_states else None,
            mcp_states=self.ctx.mcp_states() if self.ctx.mcp_states else None,
            letters=await self.ctx.repo.list_dead_letters(),
            quarantined=await self.ctx.repo.count_dead_letters(),
            failed=await self.ctx.repo.failed_inbound(),
            jobs=await self.ctx.repo.all_pending_jobs(),
            message=request.query_params.get("done", ""),
        )

    async def delete_dead_letter(self, request: Request) -> Response:
        form = await request.form()
        csrf = form.get(CSRF_FIELD)
        if not self.ctx.auth.check_csrf(request, csrf if isinstance(csrf, str) else None):
            return PlainTextResponse("Missing or wrong CSRF token.\n", status_code=403)
        letter_id = int(request.path_params["letter_id"])
        if not await self.ctx.repo.delete_dead_letter(letter_id):
            return PlainTextResponse(f"No quarantined update #{letter_id}.\n", status_code=404)
        return RedirectResponse(f"/operations?done=deleted+{letter_id}", status_code=303)

    async def metrics(self, request: Request) -> Response:
        body = await metrics_text(self.ctx.repo, self.ctx.main, self.ctx.daemon_metrics)
        return Response(body, media_type=PROMETHEUS_CONTENT_TYPE)


def summary_cost_per_compaction(
    compactions: Sequence[CompactionRecord], costs: Sequence[tuple[datetime, float]]
) -> dict[int, float]:
    """Each compaction's summary spend by its id: the summary calls since the previous
    compaction up to its own time (a summary that was dropped is paid by the next one)."""
    spent: dict[int, float] = {}
    calls = iter(costs)
    pending = next(calls, None)
    for compaction in sorted(compactions, key=lambda c: (c.created_at, c.id)):
        total = 0.0
        while pending is not None and pending[0] <= compaction.created_at:
            total += pending[1]
            pending = next(calls, None)
        spent[compaction.id] = total
    return spent


def create_app(context: DashboardContext) -> Starlette:
    """The dashboard over ``context``'s store, every path behind its login."""
    pages = _Pages(context)
    return Starlette(
        routes=[
            Route("/login", pages.login),
            Route("/", pages.overview),
            Route("/sessions", pages.sessions),
            Route("/sessions/{session_id:int}", pages.session),
            Route("/users", pages.users),
            Route("/users/access", pages.set_access, methods=["POST"]),
            Route("/operations", pages.operations),
            Route("/quarantine/{letter_id:int}/delete", pages.delete_dead_letter, methods=["POST"]),
            Route("/metrics", pages.metrics),
        ],
        middleware=[Middleware(RequireLogin, auth=context.auth)],
    )


def create_metrics_app(context: DashboardContext) -> Starlette:
    """``/metrics`` alone (``dashboard.metrics_port``), behind the same token."""
    pages = _Pages(context)
    return Starlette(
        routes=[Route("/metrics", pages.metrics)],
        middleware=[Middleware(RequireLogin, auth=context.auth)],
    )

"""The dashboard's pure parts: where it may listen, its login and CSRF tokens, its SVG charts."""

from __future__ import annotations

import re

import pytest
from starlette.requests import HTTPConnection

from gateway.dashboard import charts
from gateway.dashboard.auth import COOKIE, DashboardAuth
from gateway.dashboard.server import DashboardBindError, check_host, is_loopback, login_link


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_hosts_need_no_flag(host: str) -> None:
    assert is_loopback(host)
    check_host(host, allow_remote=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.org"])
def test_any_other_host_is_refused_without_the_flag_and_warned_about_with_it(
    host: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(DashboardBindError, match="--allow-remote"):
        check_host(host, allow_remote=False)
    check_host(host, allow_remote=True)
    assert any(r.levelname == "WARNING" and host in r.getMessage() for r in caplog.records)


def test_the_login_link_brackets_an_ipv6_host() -> None:
    assert login_link("::1", 8787, "t") == "http://[::1]:8787/login?token=t"
    assert login_link("127.0.0.1", 80, "t") == "http://127.0.0.1:80/login?token=t"


def _connection(cookie: str | None = None, authorization: str | None = None) -> HTTPConnection:
    headers = []
    if cookie is not None:
        headers.append((b"cookie", f"{COOKIE}={cookie}".encode()))
    if authorization is not None:
        headers.append((b"authorization", authorization.encode()))
    return HTTPConnection({"type": "http", "headers": headers})


def test_a_session_or_the_bearer_token_authorises_and_nothing_else() -> None:
    auth = DashboardAuth("secret-token")
    session = auth.open_session()
    assert auth.authorised(_connection(cookie=session))
    assert auth.authorised(_connection(authorization="Bearer secret-token"))
    assert not auth.authorised(_connection())
    assert not auth.authorised(_connection(cookie="made-up"))
    assert not auth.authorised(_connection(authorization="Bearer wrong"))
    assert not auth.authorised(_connection(authorization="Basic secret-token"))


def test_the_csrf_token_belongs_to_one_session() -> None:
    auth = DashboardAuth("secret-token")
    mine, other = auth.open_session(), auth.open_session()
    token = auth.csrf_token(mine)
    assert auth.check_csrf(_connection(cookie=mine), token)
    assert not auth.check_csrf(_connection(cookie=other), token)
    assert not auth.check_csrf(_connection(cookie=mine), None)
    assert not auth.check_csrf(_connection(authorization="Bearer secret-token"), token)


def test_a_random_token_is_drawn_when_the_environment_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HERMES_DASHBOARD_TOKEN", raising=False)
    first, second = DashboardAuth(), DashboardAuth()
    assert len(first.token) >= 32 and first.token != second.token
    assert not first.from_environment
    monkeypatch.setenv("HERMES_DASHBOARD_TOKEN", "from-env")
    assert DashboardAuth().token == "from-env" and DashboardAuth().from_environment


def _heights(svg: str) -> list[float]:
    return [float(h) for h in re.findall(r'<rect [^>]*height="([0-9.]+)"', svg)]


def test_stacked_bars_scale_the_tallest_day_to_the_plot_and_skip_zero_segments() -> None:
    svg = charts.stacked_bars(
        "cost",
        ["2026-12-01", "2026-12-02"],
        [charts.Series("reads", [1.0, 0.0]), charts.Series("output", [1.0, 1.0])],
    )
    heights = _heights(svg)
    plot = charts.HEIGHT - charts.MARGIN_BOTTOM - charts.MARGIN_TOP
    assert len(heights) == 3
    assert heights[0] + heights[1] == pytest.approx(plot, abs=0.2)
    assert heights[2] == pytest.approx(plot / 2, abs=0.2)
    assert "<title>2026-12-01 reads: $1.0000</title>" in svg


def test_chart_text_is_escaped() -> None:
    svg = charts.stacked_bars("a <b>", ["<day>"], [charts.Series("<s>", [1.0])])
    assert "<b>" not in svg and "<s>" not in svg and "&lt;s&gt;" in svg


def test_the_line_leaves_out_days_without_a_value() -> None:
    svg = charts.line("hit", ["d1", "d2", "d3"], [0.5, None, 1.0])
    assert svg.count("<circle") == 2 and "<polyline" in svg

"""Start-up imports only what a command needs (the SDKs and alembic take seconds to import).

Each check runs in a fresh interpreter, since this test process has imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("anthropic", "openai", "alembic", "pydantic", "sqlalchemy", "telegram", "discord")


def _imported_after(code: str, home: Path) -> set[str]:
    """Which of :data:`HEAVY` are imported once ``code`` has run in a new interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "HERMES_HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-test"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    return {name for name in HEAVY if name in modules}


def test_help_imports_none_of_the_heavy_libraries(offline_env: Path) -> None:
    code = (
        "import contextlib\nfrom gateway.cli.main import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(None):\n"
        "    main(['--help'])"
    )
    assert _imported_after(code, offline_env) == set()


def test_listing_sessions_of_an_up_to_date_database_needs_no_sdk_and_no_alembic(
    offline_env: Path,
) -> None:
    subprocess.run(
        [sys.executable, "-m", "gateway.cli.main", "db", "upgrade"],
        env={**os.environ, "HERMES_HOME": str(offline_env)},
        check=True,
        capture_output=True,
    )
    imported = _imported_after(
        "from gateway.cli.main import main\nmain(['sessions', 'list'])", offline_env
    )
    assert imported.isdisjoint({"anthropic", "openai", "alembic", "telegram", "discord"})
    # An up-to-date SQLite file is even listed without SQLAlchemy (gateway/store/sqlite_listing).
    assert "sqlalchemy" not in imported


def test_a_chat_session_opens_before_the_model_sdk_is_imported(offline_env: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from gateway.runtime.app import open_app\nfrom gateway.cli.chat import cli_address\n"
        "from gateway.config.schema import load_config\n"
        "async def main():\n"
        "    async with open_app(load_config(None)) as app:\n"
        "        await app.sessions.get(cli_address('local'))\n"
        "        assert 'anthropic' not in sys.modules\n"
        "asyncio.run(main())"
    )
    assert "anthropic" not in _imported_after(code, offline_env)

"""A value type loads only what it names: measured in a fresh interpreter.

Every import rule (layers, cycles, what plugins and hosts may import) is an import-linter
contract in pyproject.toml (``lint-imports``, run by ``./dev.sh test``). What a contract cannot
say is what importing a module loads at run time; these tests measure that for the message
value types.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PACKAGES = ("agent", "gateway", "plugins")
LIGHT_MODULE_LIMIT = 21
"""First-party modules a value type may load: under a quarter of the 87 that
``import gateway.inbound`` loaded before the layers were cut apart."""
LIGHT_MODULES = (
    "gateway.messages.inbound",
    "gateway.platforms.telegram.intake",
    "gateway.platforms.discord.intake",
)


def loaded_by(module: str) -> list[str]:
    """The modules a fresh interpreter holds after importing ``module``."""
    script = f"import json, sys, {module}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_a_message_value_type_loads_no_store_and_no_sqlalchemy(module: str) -> None:
    loaded = loaded_by(module)
    ours = [name for name in loaded if name.split(".")[0] in PACKAGES]
    assert [name for name in loaded if name.startswith(("sqlalchemy", "gateway.store"))] == []
    assert [
        name for name in ours if name.startswith(("gateway.sessions", "gateway.commands"))
    ] == []
    assert len(ours) <= LIGHT_MODULE_LIMIT, ours

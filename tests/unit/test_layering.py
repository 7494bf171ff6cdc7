"""Imports go one way: ``gateway -> agent``; ``plugins`` and ``agent`` never import ``gateway``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports (absolute imports only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("layer", ["agent", "plugins"])
def test_a_lower_layer_imports_nothing_from_the_gateway(layer: str) -> None:
    offenders = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / layer).rglob("*.py")
        if {"gateway", "sandbox", "bench"} & _imported_packages(path)
    )
    assert offenders == []


def test_plugin_migrations_and_the_example_plugins_import_nothing_from_the_gateway() -> None:
    """The plugin check above covers each plugin's own revision files, and the example
    engines the tests load as plugins keep to the same rule."""
    plugin_files = list((ROOT / "plugins").rglob("*.py"))
    revisions = [path for path in plugin_files if path.parent.name == "migrations"]
    examples = [
        path
        for folder in (ROOT / "tests" / "fixtures").glob("*_engine")
        for path in folder.rglob("*.py")
    ]
    assert any(path.name.startswith("lcm_0001") for path in revisions)
    assert any(path.parent.name == "migrations" for path in examples)
    offenders = sorted(
        str(path.relative_to(ROOT))
        for path in [*revisions, *examples]
        if {"gateway", "sandbox", "bench", "tests"} & _imported_packages(path)
    )
    assert offenders == []

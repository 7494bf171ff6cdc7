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

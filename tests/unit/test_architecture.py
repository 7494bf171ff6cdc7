"""The folder tree is the architecture: imports point down, at every level, and a value type
loads only what it names.

The layer and independence contracts themselves are import-linter's (``lint-imports``, run by
``./dev.sh test``, contracts in pyproject.toml). These tests check what a contract cannot say:
that no cycle exists anywhere, counting imports inside functions and under TYPE_CHECKING, and
that the message value types stay light.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable

import grimp
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


def import_graph() -> grimp.ImportGraph:
    """Every import of our packages, wherever it is written (functions and TYPE_CHECKING too)."""
    return grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def module_edges(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    return {
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
    }


def folder(module: str, depth: int) -> str:
    """The unit a module belongs to when the tree is cut at ``depth`` dotted parts."""
    return ".".join(module.split(".")[:depth])


def test_no_module_imports_itself_back_through_others() -> None:
    assert cycles(module_edges(import_graph())) == []


@pytest.mark.parametrize("depth", [2, 3])
def test_no_folder_imports_itself_back_through_others(depth: int) -> None:
    """Cut at each level (``gateway.sessions``, then ``gateway.platforms.telegram``), the units
    of the tree import one another one way only."""
    units = {
        (folder(a, depth), folder(b, depth))
        for a, b in module_edges(import_graph())
        if folder(a, depth) != folder(b, depth)
        # a unit's own parent package may name it (re-exports): inside one folder, not up
        and not folder(a, depth).startswith(folder(b, depth) + ".")
        and not folder(b, depth).startswith(folder(a, depth) + ".")
    }
    assert cycles(units) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]


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

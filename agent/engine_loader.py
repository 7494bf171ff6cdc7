"""Finding and loading context engines by the name ``context.engine`` gives.

Resolution order for a name: ``"compressor"`` is always the built-in engine; then a plugin
folder ``<project>/plugins/context_engine/<name>/``, then ``$HERMES_HOME/plugins/context_engine/
<name>/``; then engines registered with
:func:`agent.engines.context_engine.register_context_engine`; then Python entry points in the
``hermes.context_engines`` group; otherwise the built-in engine, with a warning naming the unknown
engine. Discovery only lists names: no plugin code runs until the configuration names it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent.compressor.context_compressor import ContextCompressor
from agent.compressor.factory import create_compressor
from agent.engines.context_engine import ContextEngine, EngineContext, registered_engines
from agent.engines.plugin_migrations import PLUGIN_SUBDIR

log = logging.getLogger(__name__)

BUILTIN_ENGINE = ContextCompressor.name
ENTRY_POINT_GROUP = "hermes.context_engines"
PLUGIN_FACTORY = "create_engine"
PLUGIN_PACKAGE = "hermes_plugins.context_engine"
"""Plugin folders are imported as sub-packages of this (made-up) package."""
_ENGINE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")

EngineSource = Literal["builtin", "project", "home", "entry_point", "registered"]


class EngineLoadError(RuntimeError):
    """A named context engine exists but could not be loaded or built."""


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """One engine that could be selected: its name, where it comes from, and its folder."""

    name: str
    source: EngineSource
    path: Path | None = None


def _plugin_folders(project_root: Path, hermes_home: Path) -> list[tuple[EngineSource, Path]]:
    return [("project", project_root / PLUGIN_SUBDIR), ("home", hermes_home / PLUGIN_SUBDIR)]


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def discover_engines(project_root: Path, hermes_home: Path) -> list[EngineInfo]:
    """Every selectable engine, in resolution order, without importing any plugin.

    Each name appears once, from the source that :func:`load_context_engine` would use.
    """
    found = [EngineInfo(BUILTIN_ENGINE, "builtin")]
    for source, base in _plugin_folders(project_root, hermes_home):
        if not base.is_dir():
            continue
        for folder in sorted(base.iterdir()):
            if (folder / "__init__.py").is_file() and _ENGINE_NAME.match(folder.name):
                found.append(EngineInfo(folder.name, source, folder))
    found.extend(EngineInfo(name, "registered") for name in sorted(registered_engines()))
    found.extend(EngineInfo(ep.name, "entry_point") for ep in _entry_points())
    first_by_name: dict[str, EngineInfo] = {}
    for info in found:
        first_by_name.setdefault(info.name, info)
    return list(first_by_name.values())


def _ensure_namespace(name: str) -> None:
    """Create the empty parent packages plugin modules are imported under."""
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = []
            sys.modules[package] = module


def import_plugin(name: str, folder: Path) -> types.ModuleType:
    """Import the plugin package in ``folder`` (relative imports inside it work).

    The module name includes a hash of the folder, so two folders with the same engine name
    never share a module. Raises :class:`EngineLoadError` with the cause when it fails.
    """
    digest = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:8]
    safe = re.sub(r"\W", "_", name)
    module_name = f"{PLUGIN_PACKAGE}.{safe}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    _ensure_namespace(PLUGIN_PACKAGE)
    spec = importlib.util.spec_from_file_location(
        module_name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise EngineLoadError(f"context engine plugin {name!r}: cannot import {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # third-party code: any failure becomes one clear error
        for loaded in [
            m for m in sys.modules if m == module_name or m.startswith(module_name + ".")
        ]:
            del sys.modules[loaded]
        raise EngineLoadError(
            f"context engine plugin {name!r} at {folder} failed to import: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return module


def _build(name: str, where: str, factory: Any, ctx: EngineContext) -> ContextEngine:
    """Call an engine factory and check that it produced an engine."""
    if not callable(factory):
        raise EngineLoadError(f"context engine {name!r} ({where}) has no callable factory")
    try:
        engine = factory(ctx)
    except Exception as exc:  # third-party factory: report which engine failed and why
        raise EngineLoadError(
            f"context engine {name!r} ({where}) failed to start: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(engine, ContextEngine):
        raise EngineLoadError(
            f"context engine {name!r} ({where}) returned {type(engine).__name__}, "
            "not a ContextEngine"
        )
    return engine


def load_context_engine(
    name: str, ctx: EngineContext, *, project_root: Path, hermes_home: Path
) -> ContextEngine:
    """Build the engine ``name`` for one session (see the module docstring for the order).

    Raises :class:`EngineLoadError` when the named engine exists but fails to load.
    """
    if not name or name == BUILTIN_ENGINE:
        return create_compressor(ctx)
    if not _ENGINE_NAME.match(name):
        raise EngineLoadError(f"invalid context engine name {name!r}")
    for source, base in _plugin_folders(project_root, hermes_home):
        folder = base / name
        if (folder / "__init__.py").is_file():
            module = import_plugin(name, folder)
            factory = getattr(module, PLUGIN_FACTORY, None)
            return _build(name, f"{source} plugin {folder}", factory, ctx)
    registered = registered_engines().get(name)
    if registered is not None:
        return _build(name, "registered", registered, ctx)
    for entry_point in _entry_points():
        if entry_point.name == name:
            try:
                factory = entry_point.load()
            except Exception as exc:  # third-party package: report it by engine name
                raise EngineLoadError(
                    f"context engine {name!r} (entry point {entry_point.value}) failed to "
                    f"import: {type(exc).__name__}: {exc}"
                ) from exc
            return _build(name, f"entry point {entry_point.value}", factory, ctx)
    log.warning("unknown context engine %r; using the built-in %r engine", name, BUILTIN_ENGINE)
    return create_compressor(ctx)

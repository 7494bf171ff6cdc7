"""Choosing a context engine by name: built-in, plugin folders, registered, entry points."""

from __future__ import annotations

import importlib.metadata
import logging
import shutil
import textwrap
from pathlib import Path

import pytest

from agent.compressor.context_compressor import ContextCompressor
from agent.engine_loader import EngineLoadError, discover_engines, load_context_engine
from agent.engines.context_engine import ContextEngine, EngineContext, register_context_engine

Roots = tuple[Path, Path]
"""(project root, HERMES_HOME) of one test."""
EXAMPLE_ENGINE = Path(__file__).parent.parent / "fixtures" / "example_engine"


async def no_model(task: str, messages: list[dict[str, object]], max_tokens: int | None) -> str:
    raise AssertionError("the summary model is not needed here")


@pytest.fixture
def ctx() -> EngineContext:
    return EngineContext(context_length=8_000, call_llm=no_model, engine_config={"keep": 2})


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    return tmp_path / "project", tmp_path / "home"


@pytest.fixture(autouse=True)
def isolated_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    """No engines registered by other tests, and no entry points of installed packages."""
    monkeypatch.setattr("agent.engines.context_engine._REGISTRY", {})
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [])


def install_example(root: Path, name: str) -> Path:
    folder = root / "plugins" / "context_engine" / name
    shutil.copytree(EXAMPLE_ENGINE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def write_plugin(root: Path, name: str, body: str) -> Path:
    folder = root / "plugins" / "context_engine" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(body))
    return folder


def load(name: str, ctx: EngineContext, roots: Roots) -> ContextEngine:
    project, home = roots
    return load_context_engine(name, ctx, project_root=project, hermes_home=home)


def test_compressor_is_always_the_builtin_engine(ctx: EngineContext, roots: Roots) -> None:
    write_plugin(roots[0], "compressor", "raise RuntimeError('must never be imported')")
    engine = load("compressor", ctx, roots)
    assert isinstance(engine, ContextCompressor)
    assert engine.threshold_tokens == 4_000


async def test_a_project_plugin_folder_is_loaded_with_its_relative_imports(
    ctx: EngineContext, roots: Roots
) -> None:
    install_example(roots[0], "keep_recent")
    engine = load("keep_recent", ctx, roots)
    assert engine.name == "keep_recent"
    assert [schema["name"] for schema in engine.get_tool_schemas()] == ["context_status"]
    messages = [{"role": "system", "content": "s"}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": str(i)} for i in range(6)
    ]
    result = await engine.compact(messages, trigger="manual")
    assert [m["content"] for m in result.messages] == ["s", "4", "5"]
    assert await engine.handle_tool_call("context_status", {}) == "compacted 1 time(s)"


def test_the_project_folder_wins_over_hermes_home(ctx: EngineContext, roots: Roots) -> None:
    install_example(roots[0], "keep_recent")
    write_plugin(roots[1], "keep_recent", "raise RuntimeError('home copy must not load')")
    assert load("keep_recent", ctx, roots).name == "keep_recent"
    listed = [(e.name, e.source) for e in discover_engines(*roots)]
    assert listed == [("compressor", "builtin"), ("keep_recent", "project")]


def test_a_plugin_in_hermes_home_is_found_when_the_project_has_none(
    ctx: EngineContext, roots: Roots
) -> None:
    install_example(roots[1], "mine")
    assert load("mine", ctx, roots).name == "keep_recent"


def test_a_registered_engine_is_used_by_name(ctx: EngineContext, roots: Roots) -> None:
    register_context_engine("tiny", lambda c: ContextCompressor(c.context_length // 2))
    engine = load("tiny", ctx, roots)
    assert isinstance(engine, ContextCompressor) and engine.context_length == 4_000


def test_an_entry_point_engine_is_used_by_name(
    ctx: EngineContext, roots: Roots, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "third_party_engine.py").write_text(
        "from agent.compressor.context_compressor import ContextCompressor\n"
        "def factory(ctx):\n"
        "    return ContextCompressor(ctx.context_length, threshold=0.9)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    point = importlib.metadata.EntryPoint(
        name="third", value="third_party_engine:factory", group="hermes.context_engines"
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [point])
    engine = load("third", ctx, roots)
    assert isinstance(engine, ContextCompressor) and engine.threshold_tokens == 7_200
    assert ("third", "entry_point") in {(e.name, e.source) for e in discover_engines(*roots)}


def test_an_unknown_engine_falls_back_to_the_builtin_with_a_warning(
    ctx: EngineContext, roots: Roots, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent.engine_loader"):
        engine = load("nonexistent", ctx, roots)
    assert isinstance(engine, ContextCompressor)
    assert "nonexistent" in caplog.text


def test_discovery_lists_plugins_without_running_their_code(
    ctx: EngineContext, roots: Roots, tmp_path: Path
) -> None:
    marker = tmp_path / "imported"
    write_plugin(roots[0], "noisy", f"open({str(marker)!r}, 'w').close()")
    install_example(roots[1], "keep_recent")
    register_context_engine("tiny", lambda c: ContextCompressor(c.context_length))
    engines = discover_engines(*roots)
    assert [(e.name, e.source) for e in engines][:4] == [
        ("compressor", "builtin"),
        ("noisy", "project"),
        ("keep_recent", "home"),
        ("tiny", "registered"),
    ]
    assert engines[1].path == roots[0] / "plugins" / "context_engine" / "noisy"
    load("compressor", ctx, roots)
    assert not marker.exists()  # a plugin is never imported unless named


def test_a_plugin_that_fails_to_import_names_itself_and_the_cause(
    ctx: EngineContext, roots: Roots
) -> None:
    write_plugin(roots[0], "broken", "import module_that_does_not_exist\n")
    with pytest.raises(EngineLoadError, match=r"'broken'.*module_that_does_not_exist"):
        load("broken", ctx, roots)


def test_a_plugin_without_a_factory_is_a_clear_error(ctx: EngineContext, roots: Roots) -> None:
    write_plugin(roots[0], "empty", "VALUE = 1\n")
    with pytest.raises(EngineLoadError, match=r"'empty'.*no callable factory"):
        load("empty", ctx, roots)


def test_a_factory_that_returns_something_else_is_a_clear_error(
    ctx: EngineContext, roots: Roots
) -> None:
    write_plugin(roots[0], "odd", "def create_engine(ctx):\n    return object()\n")
    with pytest.raises(EngineLoadError, match=r"'odd'.*not a ContextEngine"):
        load("odd", ctx, roots)


def test_an_engine_name_cannot_point_outside_the_plugin_folders(
    ctx: EngineContext, roots: Roots
) -> None:
    with pytest.raises(EngineLoadError, match="invalid"):
        load("../escape", ctx, roots)

"""Shared fixtures of the lossless-engine tests: the integration fixtures (emulator, a clean
environment, a config writer) plus helpers to read the stored DAG."""

from __future__ import annotations

from pathlib import Path

from agent.engine_loader import import_plugin
from tests.integration.conftest import _clean_env, emulator  # noqa: F401 - pytest fixtures

ROOT = Path(__file__).resolve().parents[2]
LCM_FOLDER = ROOT / "plugins" / "context_engine" / "lcm"


def lcm_package():
    """The plugin package as the host loads it (by path), for tests that need its modules."""
    return import_plugin("lcm", LCM_FOLDER)

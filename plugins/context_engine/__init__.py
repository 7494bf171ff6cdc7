"""Context-engine plugins: one folder per engine, selected by ``context.engine: <name>``.

A folder ``plugins/context_engine/<name>/`` whose ``__init__.py`` defines
``create_engine(ctx: EngineContext) -> ContextEngine`` is found by :mod:`agent.engine_loader`
and imported by path only when the configuration names it.
"""

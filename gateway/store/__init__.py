"""The durable store: sessions, messages, compactions, API usage and inbound messages.

Open it with :func:`gateway.store.db.open_store` (which applies the alembic migrations) and
query it through :class:`gateway.store.repository.Repository` (its consumers through the small
protocols of :mod:`gateway.store.ports`)::

    store = await open_store(default_database_url(hermes_home()))
    repo = Repository(store)
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    ...
    await store.close()

The package itself imports nothing: a module that needs no SQLAlchemy (locations,
sqlite_listing) is imported without it.
"""

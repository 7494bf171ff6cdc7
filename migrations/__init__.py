"""Alembic environment and schema versions for the Hermes Gateway store."""

"""Schema revisions, applied in order by alembic."""

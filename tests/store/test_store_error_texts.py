"""Database errors end up in logs: their text never quotes a statement's values."""

from __future__ import annotations

import pytest
from sqlalchemy import text as sql
from sqlalchemy.exc import SQLAlchemyError

from gateway.store.repository import Repository


async def test_a_database_error_never_quotes_the_values_of_its_statement(repo: Repository) -> None:
    with pytest.raises(SQLAlchemyError) as caught:
        async with repo.store.sessionmaker() as session:
            await session.execute(
                sql("INSERT INTO nosuch (x) VALUES (:x)"), {"x": "my secret diary"}
            )
    assert "my secret diary" not in str(caught.value)

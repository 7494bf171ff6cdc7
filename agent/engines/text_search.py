"""What a full-text query is: its words, punctuation and operators dropped.

The host's searches (:meth:`agent.engines.message_archive.MessageArchive.search_messages` and
``search_records``) match these words, so an engine that highlights a hit (a snippet around
the first word found) reads the query the same way.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def query_words(query: str) -> list[str]:
    """The words of a search query (punctuation and operators dropped)."""
    return _WORD.findall(query)

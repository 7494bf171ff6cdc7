"""How an unexpected failure is described where users' words must not go (logs, records).

An exception's message may quote what a user wrote (a parser error echoing its input), so the
log and the stored reason get the exception's type and where it was raised, never its text.
"""

from __future__ import annotations

import traceback
from pathlib import PurePath


def failure_summary(exc: BaseException) -> str:
    """``KeyError at gateway/media/prepare.py:120 in _read``: the type and the innermost
    frame, without the message."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    frame = frames[-1]
    parts = PurePath(frame.filename).parts
    where = "/".join(parts[-3:])
    return f"{type(exc).__name__} at {where}:{frame.lineno} in {frame.name}"

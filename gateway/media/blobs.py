"""The blob folder: every attachment's bytes kept once, named by their SHA-256.

Messages reference blobs (:class:`agent.attachments.AttachmentRef`); the store keeps only the
reference. :func:`hydrate_context` puts the bytes back into messages read from the store.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from agent.attachments import (
    PAYLOAD_PART_TYPES,
    attachment_of,
    attachment_part,
    has_payload,
    placeholder_part,
)
from agent.types import Message

log = logging.getLogger(__name__)


class BlobStore:
    """Content-addressed files under ``root``: ``ab/abcdef...`` (two-character fan-out)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, sha256: str) -> Path:
        """Where the blob with this hash lives (whether or not it exists)."""
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        """Keep ``data`` (once: an existing blob is not written again); returns its SHA-256."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a crash never leaves a truncated blob under the final name.
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return digest

    def get(self, sha256: str) -> bytes:
        """The blob's bytes; raises ``FileNotFoundError`` when it is not kept here."""
        return self.path(sha256).read_bytes()


def hydrate_context(messages: list[Message], blobs: BlobStore) -> None:
    """Put the bytes back into attachment parts read from the store (in place).

    A blob that is gone (deleted by hand) leaves a placeholder saying what was there.
    """
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for index, part in enumerate(content):
            ref = attachment_of(part)
            if ref is None or part.get("type") not in PAYLOAD_PART_TYPES or has_payload(part):
                continue
            try:
                content[index] = attachment_part(ref, blobs.get(ref.sha256))
            except FileNotFoundError:
                log.warning("attachment blob %s is missing; a placeholder stands in", ref.sha256)
                content[index] = placeholder_part(ref)

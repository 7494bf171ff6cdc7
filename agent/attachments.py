"""Attachments inside messages: what a photo or document part is, and what it costs.

A message's content may hold attachment parts next to its text parts. In memory an image part is
an OpenAI-style ``image_url`` part with a base64 data URL, a PDF an Anthropic ``document`` block;
both carry an ``"attachment"`` key with the :class:`AttachmentRef` that names the stored bytes.
The store keeps only the reference (:func:`stored_content`) and the bytes once in a blob folder;
:func:`attachment_part` rebuilds the full part from the bytes. Providers drop the
``"attachment"`` key on the wire.
"""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

ATTACHMENT_KEY = "attachment"
"""The key of a content part that holds its :class:`AttachmentRef` as a dict."""
PDF_MIME = "application/pdf"
IMAGE_MIME_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image formats the Anthropic API accepts."""
IMAGE_TOKEN_DIVISOR = 750
"""Anthropic's rule: an image costs about width x height / 750 tokens."""
IMAGE_LONG_EDGE = 1568
"""The API downsizes past this long edge, so an image never costs more than at this size."""
MAX_IMAGE_TOKENS = 1568 * 1568 // IMAGE_TOKEN_DIVISOR
"""The cap of an image's token count (the API's downsizing bounds it)."""
PAYLOAD_PART_TYPES = frozenset({"image_url", "document"})
"""Attachment parts that carry bytes when in context (a placeholder is a plain text part)."""
UNKNOWN_IMAGE_TOKENS = 1_500
"""An image whose dimensions are unknown: a typical photo's cost."""
PDF_PAGE_TOKENS = 2_300
"""About one PDF page: its text plus an image of the page (the docs say 1,500-3,000)."""


@dataclass(frozen=True, slots=True)
class AttachmentRef:
    """One stored attachment: its blob (``sha256``) and what the platform told us of it."""

    kind: str
    """What the person sent: "photo", "image" (an image sent as a file), "document"."""
    sha256: str
    mime_type: str
    size: int
    width: int | None = None
    height: int | None = None
    pages: int | None = None
    file_name: str | None = None
    platform_file_id: str | None = None
    shared_at: float | None = None
    """The platform's time of the message that carried it (epoch seconds)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (stored in the message's content part)."""
        return {key: value for key, value in asdict(self).items() if value is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttachmentRef:
        """The reference stored with :meth:`to_dict` (unknown keys ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})

    @property
    def is_image(self) -> bool:
        """Whether the model sees it as an image block."""
        return self.mime_type in IMAGE_MIME_TYPES

    def tokens(self) -> int:
        """What the model is charged for it (image rule, or pages x the per-page estimate)."""
        if self.is_image:
            return image_tokens(self.width, self.height)
        return max(self.pages or 1, 1) * PDF_PAGE_TOKENS

    def placeholder(self) -> str:
        """What stands in for it once the bytes are no longer sent, e.g.
        ``[image: photo, 1280x960, shared 2026-12-03 09:14]``."""
        label = "image" if self.is_image else "document"
        details = [self.file_name or self.kind]
        if self.width and self.height:
            details.append(f"{self.width}x{self.height}")
        if self.pages:
            details.append(f"{self.pages} pages")
        if self.shared_at is not None:
            shared = datetime.fromtimestamp(self.shared_at, UTC).strftime("%Y-%m-%d %H:%M")
            details.append(f"shared {shared}")
        return f"[{label}: {', '.join(details)}]"


def image_tokens(width: int | None, height: int | None) -> int:
    """Anthropic's image cost: width x height / 750, capped by the API's own downsizing."""
    if not width or not height:
        return UNKNOWN_IMAGE_TOKENS
    return max(1, min(width * height // IMAGE_TOKEN_DIVISOR, MAX_IMAGE_TOKENS))


def attachment_part(ref: AttachmentRef, data: bytes) -> dict[str, Any]:
    """The content part the model gets for ``ref``'s bytes (image_url or document)."""
    encoded = base64.b64encode(data).decode("ascii")
    if ref.is_image:
        url = f"data:{ref.mime_type};base64,{encoded}"
        return {"type": "image_url", "image_url": {"url": url}, ATTACHMENT_KEY: ref.to_dict()}
    source = {"type": "base64", "media_type": ref.mime_type, "data": encoded}
    return {"type": "document", "source": source, ATTACHMENT_KEY: ref.to_dict()}


def attachment_of(part: Any) -> AttachmentRef | None:
    """The reference of an attachment part, None for any other part."""
    if isinstance(part, dict) and isinstance(part.get(ATTACHMENT_KEY), dict):
        return AttachmentRef.from_dict(part[ATTACHMENT_KEY])
    return None


def stored_content(content: Any) -> Any:
    """The content as stored: attachment parts keep their type and reference, not the bytes."""
    if not isinstance(content, list):
        return content
    return [
        {"type": part["type"], ATTACHMENT_KEY: part[ATTACHMENT_KEY]}
        if attachment_of(part) is not None and part.get("type") in PAYLOAD_PART_TYPES
        else part
        for part in content
    ]


def has_payload(part: dict[str, Any]) -> bool:
    """Whether an attachment part carries its bytes (else it is a stored reference)."""
    return "image_url" in part or "source" in part


def sendable_part(part: Any) -> Any:
    """The part itself, or its placeholder when it is a stored reference without its bytes
    (read back from the store without the blob folder): a provider never gets a hollow part."""
    ref = attachment_of(part)
    if ref is not None and part.get("type") in PAYLOAD_PART_TYPES and not has_payload(part):
        marker = {"cache_control": part["cache_control"]} if "cache_control" in part else {}
        return {**placeholder_part(ref), **marker}
    return part


def message_attachments(content: Any) -> list[AttachmentRef]:
    """The attachments referenced in a message's content, in order."""
    if not isinstance(content, list):
        return []
    return [ref for part in content if (ref := attachment_of(part)) is not None]


def placeholder_part(ref: AttachmentRef) -> dict[str, Any]:
    """A text part saying what was attached, keeping the reference (pruned context)."""
    return {"type": "text", "text": ref.placeholder(), ATTACHMENT_KEY: ref.to_dict()}


def part_tokens(part: Any) -> int | None:
    """What an image or document part costs the model (None for any other part).

    An attachment part is counted by its reference (image rule, PDF pages); a bare image part
    (no reference) by the typical photo's cost; never by the length of its base64.
    """
    if not isinstance(part, dict) or part.get("type") not in ("image", "image_url", "document"):
        return None
    ref = attachment_of(part)
    if ref is not None:
        return ref.tokens()
    return UNKNOWN_IMAGE_TOKENS if part.get("type") != "document" else PDF_PAGE_TOKENS

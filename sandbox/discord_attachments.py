"""Attachment objects as Discord sends them on a message (tests build messages with them)."""

from __future__ import annotations

from sandbox.discord_world import JSON


def attachment(
    attachment_id: int, filename: str, content_type: str, *, voice: bool = False
) -> JSON:
    """An attachment object as Discord sends it (a voice message has flag and duration)."""
    payload: JSON = {
        "id": str(attachment_id),
        "filename": filename,
        "size": 2048,
        "url": f"https://cdn.example.invalid/attachments/{attachment_id}/{filename}",
        "proxy_url": f"https://media.example.invalid/attachments/{attachment_id}/{filename}",
        "content_type": content_type,
    }
    if voice:
        payload.update({"flags": 1 << 13, "duration_secs": 3.5, "waveform": "AAAA"})
    return payload

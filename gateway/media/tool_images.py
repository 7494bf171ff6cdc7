"""The images of tool results, kept like a user's photos (the agent's
:class:`agent.tools.result_images.ResultImages` port).

An image a tool returns is decoded and fitted to the API's limits as a photo is
(:func:`gateway.media.images.prepare_image`), its bytes kept once in the blob folder, and handed
to the model as an attachment part: the stored message keeps only the reference, and a session
read back from the store gets the bytes again (:func:`gateway.media.blobs.hydrate_context`). An
image that cannot be read or kept is left to the tool's placeholder: never a request the API
refuses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agent.attachments import AttachmentRef, attachment_part
from gateway.media.blobs import BlobStore
from gateway.media.images import UnreadableImage, prepare_image
from gateway.settings.media import MediaSettings

log = logging.getLogger(__name__)

TOOL_IMAGE_KIND = "tool result"
"""The attachment kind of a tool's image (its placeholder reads ``[image: tool result, WxH]``)."""


class ToolResultImages:
    """One session's tool-result images: shown while ``shown()`` says its model sees them."""

    def __init__(
        self, blobs: BlobStore, settings: MediaSettings, shown: Callable[[], bool]
    ) -> None:
        self._blobs = blobs
        self._settings = settings
        self._shown = shown

    def shown(self) -> bool:
        """Whether the session's model sees images in tool results now."""
        return self._shown()

    def part(self, data: bytes, mime_type: str) -> dict[str, Any] | None:
        """The image as an attachment part (its bytes kept), None when it cannot be read or
        kept; ``mime_type`` is what the tool claimed, the bytes decide."""
        settings = self._settings
        try:
            image = prepare_image(
                data, max_edge=settings.max_image_edge, max_bytes=settings.max_image_bytes
            )
        except UnreadableImage as exc:
            log.warning("tool image (%s) not readable: %s", mime_type, exc)
            return None
        try:
            digest = self._blobs.put(image.data)
        except OSError as exc:  # the blob folder: full disk, no permission
            log.error("tool image not kept: %s", type(exc).__name__)
            return None
        ref = AttachmentRef(
            kind=TOOL_IMAGE_KIND,
            sha256=digest,
            mime_type=image.mime_type,
            size=len(image.data),
            width=image.width,
            height=image.height,
        )
        return attachment_part(ref, image.data)

"""The Discord emulator's CDN: attachment bytes at the URLs its attachment objects name.

``cdn.upload(...)`` keeps bytes and returns the attachment object a message carries (as
Discord sends it: id, filename, size, url, proxy_url, content_type, width/height for images);
``GET /attachments/{id}/{filename}`` serves them and records the download. Downloads can be
made to fail: ``fail_downloads(status, count)`` answers the next ones with an HTTP error,
``drop_downloads(count)`` closes their connections without an answer.
"""

from __future__ import annotations

from aiohttp import web

from sandbox.discord_world import JSON

ATTACHMENTS_PATH = "/attachments/{attachment_id}/{filename}"


class AttachmentCdn:
    """Uploaded attachments by id; what was downloaded, in order."""

    def __init__(self) -> None:
        self.root_url = ""
        """``http://host:port`` once the emulator serves (set by the emulator)."""
        self._files: dict[str, bytes] = {}
        self._next_id = 800000000000000001
        self.downloads: list[str] = []
        """The filenames downloaded, in order."""
        self.attempts = 0
        """Download requests received, served or failed."""
        self._failures: list[int] = []
        self._drops = 0

    def fail_downloads(self, status: int = 500, count: int = 1) -> None:
        """Answer the next ``count`` downloads with ``status`` (500, 404, 403...)."""
        self._failures.extend([status] * count)

    def drop_downloads(self, count: int = 1) -> None:
        """Close the connection of the next ``count`` downloads without an answer."""
        self._drops += count

    def add_routes(self, app: web.Application) -> None:
        """Serve attachment downloads on ``app``."""
        app.router.add_get(ATTACHMENTS_PATH, self._download)

    def upload(
        self,
        filename: str,
        content_type: str,
        data: bytes,
        *,
        width: int | None = None,
        height: int | None = None,
        announced_size: int | None = None,
    ) -> JSON:
        """Keep ``data`` and return the attachment object for a message (``announced_size``:
        pretend it is that large)."""
        if not self.root_url:
            raise RuntimeError("start the emulator before uploading attachments")
        attachment_id = str(self._next_id)
        self._next_id += 1
        self._files[attachment_id] = data
        url = f"{self.root_url}/attachments/{attachment_id}/{filename}"
        payload: JSON = {
            "id": attachment_id,
            "filename": filename,
            "size": len(data) if announced_size is None else announced_size,
            "url": url,
            "proxy_url": url,
            "content_type": content_type,
        }
        if width is not None and height is not None:
            payload.update({"width": width, "height": height})
        return payload

    async def _download(self, request: web.Request) -> web.Response:
        self.attempts += 1
        if self._drops > 0:
            self._drops -= 1
            if request.transport is not None:
                request.transport.close()
            return web.Response()  # never written: the connection is already gone
        if self._failures:
            return web.Response(status=self._failures.pop(0), text="CDN error")
        data = self._files.get(request.match_info["attachment_id"])
        if data is None:
            return web.Response(status=404, text="Not Found")
        self.downloads.append(request.match_info["filename"])
        return web.Response(body=data, content_type="application/octet-stream")

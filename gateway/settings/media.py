"""The ``media`` section: where photos, documents and voice notes are kept and what is read.

Below the configuration schema: adapters (download limits, the photo pixel budget) and the
media reader take it without importing the whole schema.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from gateway.settings.home import hermes_home
from gateway.settings.sections import Section


class TranscriptionSettings(Section):
    """An OpenAI-compatible ``/audio/transcriptions`` endpoint for voice notes (None: off)."""

    base_url: str | None = None
    model: str = "whisper-1"
    api_key_env: str | None = None


class MediaSettings(Section):
    """Photos, documents and voice notes: where their bytes are kept and what is read."""

    blob_dir: str | None = None
    max_download_mb: Annotated[float, Field(gt=0)] = 20.0
    discord_max_download_mb: Annotated[float, Field(gt=0)] = 25.0
    max_image_edge: Annotated[int, Field(ge=200, le=8000)] = 1568
    max_photo_pixels: Annotated[int, Field(ge=10_000)] = 4_000_000
    max_image_bytes: Annotated[int, Field(ge=100_000)] = 3_750_000
    max_text_file_kb: Annotated[int, Field(ge=1)] = 200
    transcription: TranscriptionSettings = Field(default_factory=TranscriptionSettings)

    def download_limit_mb(self, platform: str) -> float:
        """The largest file (MB) downloaded from ``platform``."""
        return self.discord_max_download_mb if platform == "discord" else self.max_download_mb

    def blob_path(self) -> Path:
        """The blob folder: ``blob_dir`` (``~`` expanded), else ``$HERMES_HOME/media``."""
        if self.blob_dir:
            return Path(os.path.expanduser(self.blob_dir))
        return hermes_home() / "media"

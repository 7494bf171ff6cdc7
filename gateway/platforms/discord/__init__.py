"""Discord: adapter, intake, live replies, media, settings."""

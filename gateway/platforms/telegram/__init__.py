"""Telegram: adapter, intake, polling, webhook, media, settings."""

"""The agent: loop, providers, context engines, compressor, caching, tokens, tools.

Knows nothing about Telegram, Discord or the database schema.
"""

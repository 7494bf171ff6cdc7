"""The chat-completions (OpenAI-compatible) provider."""

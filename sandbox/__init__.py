"""Protocol-faithful local emulators (Telegram, Discord, Anthropic) for tests, demo, benchmarks."""

"""The built-in context engine: how a history is summarised."""

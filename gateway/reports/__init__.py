"""Numbers read from the store: usage, costs, health."""

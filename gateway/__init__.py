"""Hermes Gateway: the daemon that connects chat platforms to the agent and stores everything."""

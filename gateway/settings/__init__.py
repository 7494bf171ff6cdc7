"""The vocabulary every concern declares its configuration section with."""

"""The configuration file: its assembled schema, loading and validation."""

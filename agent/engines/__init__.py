"""The context-engine contract, its loading, and what engines may reach."""

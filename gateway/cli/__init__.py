"""The ``hermes`` command line and its front ends (chat, demo, doctor)."""

"""The daemon: the Gateway core, session workers, resume, process plumbing."""

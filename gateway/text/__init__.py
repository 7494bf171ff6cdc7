"""Pure text functions: splitting at platform limits, markdown, secret redaction."""

"""Value types that cross the gateway's layers: inbound messages, dead letters."""

"""When to compact: the cost model, the session clock, the scheduler."""

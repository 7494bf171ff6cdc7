"""One conversation: its runtime, engine, model, hygiene and records."""

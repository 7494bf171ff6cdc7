"""Replies out: planned in the store, sent, edited live, resumed."""

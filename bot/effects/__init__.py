"""Writes to GitHub: the actions a handler returns, the exactly-once executor, the comment store."""

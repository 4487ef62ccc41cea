"""Feature handlers, one module per feature."""

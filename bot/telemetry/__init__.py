"""Logs and metrics, which every room may use."""

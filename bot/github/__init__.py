"""Talking to GitHub: the HTTP client, App auth and installation tokens, pacing, errors."""

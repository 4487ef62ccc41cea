"""Talking to GitHub's API: the HTTP client, App auth and installation tokens, retries, pacing, errors."""

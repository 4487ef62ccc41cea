"""The App itself (`GET /app`), installation tokens, and users' tokens."""

from __future__ import annotations

import secrets
import time
from typing import Any

from bot.testing.core import GitHubCore
from bot.testing.model import NOT_FOUND, TOKEN_ALPHABET, Call, Reply, Token, iso


class AppsMixin(GitHubCore):
    ROUTES = [
        ("GET", "/app", "get_app"),
        ("POST", "/app/installations/{id}/access_tokens", "post_access_token"),
    ]

    def add_token(self, token: str, login: str) -> None:
        """Accept `token` as `login` (type User, or Bot when the login ends in [bot]); never expires."""
        self._know(login)
        self._tokens[token] = Token(login, None)

    def revoke_tokens(self) -> int:
        """Every installation token issued so far stops working (401 Bad credentials); new ones can be issued.

        Users' tokens (`add_token`) keep working. Returns how many tokens were revoked.
        """
        revoked = [t for t, entry in self._tokens.items() if entry.installation_id is not None]
        for token in revoked:
            del self._tokens[token]
        return len(revoked)

    def _route_get_app(self, call: Call) -> tuple[int, Any]:
        return 200, {"id": self.app_id, "slug": self.app_slug, "name": self.app_slug}

    def _route_post_access_token(self, call: Call, id: int) -> tuple[int, Any]:
        if id not in self._installations:
            raise Reply(404, NOT_FOUND)
        token = "ghs_" + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(36))
        expires_at = time.time() + self.token_ttl
        self._tokens[token] = Token(self.bot_login, expires_at, id)
        self.tokens_issued += 1
        return 201, {"token": token, "expires_at": iso(expires_at)}

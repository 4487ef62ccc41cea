"""GitHub's webhook signature: `X-Hub-Signature-256` is `sha256=` and the HMAC-SHA256 of the raw body."""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(body: bytes, secret: str) -> str:
    """The header value GitHub sends for `body` signed with `secret`."""
    return PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_ok(body: bytes, header: str | None, secrets: tuple[str, ...]) -> bool:
    """Whether `header` signs the raw `body` with one of `secrets` (several during a rotation), in constant time:
    every secret is compared, whichever matches."""
    if not header or not header.startswith(PREFIX) or not secrets:
        return False
    given = header.encode()
    ok = False
    for secret in secrets:
        ok |= hmac.compare_digest(sign(body, secret).encode(), given)
    return ok

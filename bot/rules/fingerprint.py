"""A short stable fingerprint of some content: effect keys and dispatch ids are built from it."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def digest(*parts: Any) -> str:
    """16 hex digits of SHA-256 over `parts` as canonical JSON: equal content, equal digest, in any process."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

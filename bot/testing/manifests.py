"""GitHub's App manifest flow: the web pages that create an App from a manifest, and the code's conversion."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import secrets
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.testing.core import GitHubCore
from bot.testing.model import NOT_FOUND, TOKEN_ALPHABET, Call, Reply, iso, user_json

MANIFEST_CODE_TTL = 3600.0  # GitHub: the code must be exchanged within one hour, and only once
WEB_LOGIN = "octocat"  # who is signed in to the fake's web pages: a personal App's owner
_SLUG_JUNK = re.compile(r"[^a-z0-9]+")


@dataclasses.dataclass
class PendingManifest:
    manifest: dict[str, Any]
    owner: dict[str, Any]
    created: float


class ManifestsMixin(GitHubCore):
    ROUTES = [
        ("POST", "/app-manifests/{code}/conversions", "post_manifest_conversion"),
    ]
    PUBLIC_ROUTES = frozenset({"post_manifest_conversion"})  # GitHub asks no credentials: the code is the secret

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._manifest_codes: dict[str, PendingManifest] = {}
        self._manifest_apps: list[dict[str, Any]] = []

    # ---- the web side (served by bot/testing/server.py) -------------------------------------

    def create_app_from_manifest(self, manifest_json: str, org: str | None = None) -> str:
        """What clicking "Create GitHub App" does: the code GitHub redirects back with (Reply 422 if unusable)."""
        manifest = parse_manifest(manifest_json)
        owner = user_json(org, "Organization") if org else user_json(WEB_LOGIN)
        code = "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(20))
        self._manifest_codes[code] = PendingManifest(manifest, owner, time.time())
        return code

    def age_manifest_codes(self, seconds: float) -> int:
        """Make every pending code `seconds` older (an hour: expired). Returns how many are pending."""
        for pending in self._manifest_codes.values():
            pending.created -= seconds
        return len(self._manifest_codes)

    def manifest_apps(self) -> list[dict[str, Any]]:
        """The Apps created through conversions, each as the conversion answered (pem and secrets included)."""
        return [dict(app) for app in self._manifest_apps]

    # ---- the API -----------------------------------------------------------------------------

    def _route_post_manifest_conversion(self, call: Call, code: str) -> tuple[int, Any]:
        pending = self._manifest_codes.pop(code, None)
        if pending is None or time.time() - pending.created > MANIFEST_CODE_TTL:
            raise Reply(404, NOT_FOUND)
        manifest = pending.manifest
        taken = {app["slug"] for app in self._manifest_apps}
        slug = base = _SLUG_JUNK.sub("-", str(manifest.get("name") or "app").lower()).strip("-") or "app"
        n = 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        now = iso(time.time())
        app = {
            "id": self._next_id(),
            "slug": slug,
            "node_id": f"A_{slug}",
            "name": manifest.get("name") or slug,
            "owner": pending.owner,
            "description": manifest.get("description") or "",
            "external_url": manifest["url"],
            "html_url": f"{self.web_url}/apps/{slug}",
            "created_at": now,
            "updated_at": now,
            "permissions": dict(manifest.get("default_permissions") or {}),
            "events": list(manifest.get("default_events") or []),
            "client_id": "Iv1." + secrets.token_hex(8),
            "client_secret": secrets.token_hex(20),
            "webhook_secret": secrets.token_hex(20),
            "pem": _new_pem(),
        }
        self._manifest_apps.append(app)
        return 201, app


def parse_manifest(manifest_json: str) -> dict[str, Any]:
    """The manifest as GitHub checks it here: a JSON object with a url and, if hooked, a webhook url."""
    try:
        manifest = json.loads(manifest_json)
    except (TypeError, ValueError):
        raise Reply(422, {"message": "The manifest is not valid JSON"}) from None
    if not isinstance(manifest, dict):
        raise Reply(422, {"message": "The manifest must be a JSON object"})
    if not isinstance(manifest.get("url"), str) or not manifest["url"]:
        raise Reply(422, {"message": "The manifest needs a url"})
    hook = manifest.get("hook_attributes")
    if hook is not None and (not isinstance(hook, dict) or not isinstance(hook.get("url"), str)):
        raise Reply(422, {"message": "hook_attributes needs a url"})
    redirect = manifest.get("redirect_url")
    if redirect is not None and (not isinstance(redirect, str) or urlsplit(redirect).scheme not in ("http", "https")):
        raise Reply(422, {"message": "redirect_url must be an http(s) URL"})
    return manifest


def _new_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode("ascii")


# ---- the HTML the fake's web pages answer with (GitHub's pages, reduced to what the flow needs) ----------


def manifest_page(manifest: dict[str, Any], action: str, manifest_json: str) -> str:
    """GitHub's "Create GitHub App" page: a summary of the manifest and the button that creates it."""
    hook = (manifest.get("hook_attributes") or {}).get("url", "")
    permissions = "".join(
        f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>"
        for k, v in sorted((manifest.get("default_permissions") or {}).items())
    )
    events = ", ".join(html.escape(str(e)) for e in manifest.get("default_events") or [])
    return _page(
        "Create GitHub App",
        f"""
<h1>Create GitHub App from a manifest</h1>
<dl><dt>Name</dt><dd id="app-name">{html.escape(str(manifest.get("name", "")))}</dd>
<dt>Homepage</dt><dd>{html.escape(manifest["url"])}</dd>
<dt>Webhook URL</dt><dd id="webhook-url">{html.escape(hook)}</dd>
<dt>Events</dt><dd>{events}</dd></dl>
<h2>Permissions</h2><ul id="permissions">{permissions}</ul>
<form method="post" action="{html.escape(action)}">
<input type="hidden" name="manifest" value="{html.escape(manifest_json)}">
<input type="hidden" name="create" value="1">
<button type="submit">Create GitHub App</button></form>""",
    )


def manifest_error_page(message: str) -> str:
    return _page("Invalid manifest", f'<h1>Invalid manifest</h1><p id="error">{html.escape(message)}</p>')


def redirect_location(manifest: dict[str, Any], code: str, state: str | None) -> str:
    """Where GitHub sends the browser after creating the App: the manifest's redirect_url with code and state."""
    target = manifest.get("redirect_url") or manifest["url"]
    query = {"code": code} | ({"state": state} if state is not None else {})
    return target + ("&" if "?" in target else "?") + urlencode(query)


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title} (fake GitHub)</title>'
        f"</head><body>{body}</body></html>"
    )

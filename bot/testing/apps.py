"""The App itself (`GET /app`), its installations and their repositories, its webhook's configuration and
deliveries, installation tokens, and users' tokens."""

from __future__ import annotations

import copy
import secrets
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization

from bot.testing.core import GitHubCore
from bot.testing.model import NOT_FOUND, TOKEN_ALPHABET, Call, Reply, Token, credentials, iso, user_json

# GitHub's answers to an App's JWT it cannot use: the key is not the App's (or the JWT is malformed), no App has
# the id in `iss`, an `iss` that is not a number.
JWT_UNDECODABLE = {"message": "A JSON web token could not be decoded"}
INTEGRATION_NOT_FOUND = {"message": "Integration not found"}
ISSUER_NOT_INTEGER = {"message": "'Issuer' claim ('iss') must be an Integer"}
HIDDEN_SECRET = "********"  # GET /app/hook/config never shows the webhook secret


class AppsMixin(GitHubCore):
    ROUTES = [
        ("GET", "/app", "get_app"),
        ("GET", "/app/installations", "list_app_installations"),
        ("POST", "/app/installations/{id}/access_tokens", "post_access_token"),
        ("GET", "/app/hook/config", "get_hook_config"),
        ("GET", "/app/hook/deliveries", "list_hook_deliveries"),
        ("GET", "/installation/repositories", "list_installation_repositories"),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._app_public_key: Any = None  # set_app_key: JWTs are then checked as GitHub checks them
        self.app_permissions: dict[str, str] = {}
        self.app_events: list[str] = []
        self._hook_config: dict[str, Any] = {"content_type": "json", "insecure_ssl": "0", "url": None}
        self._hook_deliveries: list[dict[str, Any]] = []

    # ---- state setup ----------------------------------------------------------------------

    def add_token(self, token: str, login: str) -> None:
        """Accept `token` as `login` (type User, or Bot when the login ends in [bot]); never expires."""
        self._know(login)
        self._tokens[token] = Token(login, None)

    def set_app_key(self, private_key_pem: str) -> None:
        """From now on the App's JWT must be signed with this key and name this App's id (`iss`), as on GitHub:
        another key is 401 "A JSON web token could not be decoded", another id 404 "Integration not found".
        Until this is called any JWT with an issuer is accepted."""
        key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
        self._app_public_key = key.public_key()

    def configure_app(
        self,
        *,
        permissions: dict[str, str] | None = None,
        events: list[str] | None = None,
        hook_url: str | None = None,
        hook_content_type: str | None = None,
    ) -> None:
        """The App's settings as its owner set them: permissions, events, the webhook's URL and content type.
        An installation's permissions and events follow the App's unless `set_installation` says otherwise
        (an owner who has not yet accepted new permissions)."""
        if permissions is not None:
            self.app_permissions = dict(permissions)
        if events is not None:
            self.app_events = list(events)
        if hook_url is not None:
            self._hook_config["url"] = hook_url
        if hook_content_type is not None:
            self._hook_config["content_type"] = hook_content_type

    def set_installation(
        self, installation_id: int, *, permissions: dict[str, str] | None = None, events: list[str] | None = None
    ) -> None:
        """What one installation granted, when it differs from the App's settings."""
        installation = self._installations[installation_id]
        if permissions is not None:
            installation["permissions"] = dict(permissions)
        if events is not None:
            installation["events"] = list(events)

    def move_repo(self, full_name: str, installation_id: int | None) -> None:
        """The repository is now in another installation's selection (None: in none, the App is not installed)."""
        repo = self._repo(full_name)
        repo.installation_id = installation_id
        if installation_id is not None:
            self._installations.setdefault(installation_id, {"id": installation_id, "account": repo.json["owner"]})

    def add_hook_delivery(
        self,
        event: str,
        *,
        action: str | None = None,
        status_code: int = 202,
        status: str | None = None,
        guid: str | None = None,
        redelivery: bool = False,
        installation_id: int | None = 1,
        repository_id: int | None = None,
    ) -> dict[str, Any]:
        """One delivery in the App's webhook log (newest first in the listing). `status` is GitHub's words for
        it: "OK" for a 2xx, else e.g. "Invalid HTTP Response: 503"."""
        delivery = {
            "id": self._next_id(),
            "guid": guid or str(uuid.uuid4()),
            "delivered_at": self._stamp(),
            "redelivery": redelivery,
            "duration": 0.12,
            "status": status or ("OK" if 200 <= status_code < 300 else f"Invalid HTTP Response: {status_code}"),
            "status_code": status_code,
            "event": event,
            "action": action,
            "installation_id": installation_id,
            "repository_id": repository_id,
            "throttled_at": None,
        }
        self._hook_deliveries.append(delivery)
        return copy.deepcopy(delivery)

    def revoke_tokens(self) -> int:
        """Every installation token issued so far stops working (401 Bad credentials); new ones can be issued.

        Users' tokens (`add_token`) keep working. Returns how many tokens were revoked.
        """
        revoked = [t for t, entry in self._tokens.items() if entry.installation_id is not None]
        for token in revoked:
            del self._tokens[token]
        return len(revoked)

    # ---- the JWT ----------------------------------------------------------------------------

    def _jwt_refusal(self, token: str) -> tuple[int, dict[str, str]] | None:
        """Why GitHub would refuse this App JWT once the App's key is known (set_app_key), else None."""
        if self._app_public_key is None:
            return None
        try:
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        except jwt.PyJWTError:
            return 401, JWT_UNDECODABLE
        if not str(issuer).isdigit():
            return 401, ISSUER_NOT_INTEGER
        if int(str(issuer)) != self.app_id:
            return 404, INTEGRATION_NOT_FOUND
        try:
            jwt.decode(token, self._app_public_key, algorithms=["RS256"])
        except jwt.PyJWTError:
            return 401, JWT_UNDECODABLE
        return None

    # ---- routes ---------------------------------------------------------------------------

    def _installation_json(self, installation: dict[str, Any]) -> dict[str, Any]:
        iid, account = installation["id"], installation["account"]
        org = account.get("type") == "Organization"
        settings = f"organizations/{account['login']}/settings" if org else "settings"
        now = iso(time.time())
        return {
            "id": iid,
            "account": copy.deepcopy(account),
            "repository_selection": "selected",
            "access_tokens_url": f"{self.base_url}/app/installations/{iid}/access_tokens",
            "repositories_url": f"{self.base_url}/installation/repositories",
            "html_url": f"{self.web_url}/{settings}/installations/{iid}",
            "app_id": self.app_id,
            "app_slug": self.app_slug,
            "target_id": account["id"],
            "target_type": account.get("type", "User"),
            "permissions": dict(installation.get("permissions", self.app_permissions)),
            "events": list(installation.get("events", self.app_events)),
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "created_at": now,
            "updated_at": now,
            "suspended_by": None,
            "suspended_at": None,
        }

    def _route_get_app(self, call: Call) -> tuple[int, Any]:
        now = iso(time.time())
        return 200, {
            "id": self.app_id,
            "slug": self.app_slug,
            "node_id": f"A_{self.app_slug}",
            "client_id": f"Iv1.{self.app_id:016x}",
            "owner": user_json("acme", "Organization"),
            "name": self.app_slug,
            "description": "",
            "external_url": f"{self.web_url}/{self.app_slug}",
            "html_url": f"{self.web_url}/apps/{self.app_slug}",
            "created_at": now,
            "updated_at": now,
            "permissions": dict(self.app_permissions),
            "events": list(self.app_events),
            "installations_count": len(self._installations),
        }

    def _route_list_app_installations(self, call: Call) -> tuple[int, Any, dict[str, str]]:
        installations = [self._installation_json(i) for _, i in sorted(self._installations.items())]
        return self._paginate(call, installations)

    def _route_list_installation_repositories(self, call: Call) -> tuple[int, Any, dict[str, str]]:
        _, token = credentials(call.request)
        entry = self._tokens.get(token or "")
        if entry is None or entry.installation_id is None:  # a user's token: GitHub answers 403 here
            raise Reply(403, {"message": "This endpoint can only be accessed with an installation token"})
        covered = [
            copy.deepcopy(repo.json)
            for repo in self._repos.values()
            if repo.installation_id == entry.installation_id and not repo.json.get("fork")
        ]
        status, page, headers = self._paginate(call, covered)
        return status, {"total_count": len(covered), "repository_selection": "selected", "repositories": page}, headers

    def _route_get_hook_config(self, call: Call) -> tuple[int, Any]:
        return 200, {**self._hook_config, "secret": HIDDEN_SECRET}

    def _route_list_hook_deliveries(self, call: Call) -> tuple[int, Any, dict[str, str]]:
        return self._paginate(call, [copy.deepcopy(d) for d in reversed(self._hook_deliveries)])

    def _route_post_access_token(self, call: Call, id: int) -> tuple[int, Any]:
        if id not in self._installations:
            raise Reply(404, NOT_FOUND)
        token = "ghs_" + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(36))
        expires_at = time.time() + self.token_ttl
        self._tokens[token] = Token(self.bot_login, expires_at, id)
        self.tokens_issued += 1
        return 201, {"token": token, "expires_at": iso(expires_at)}

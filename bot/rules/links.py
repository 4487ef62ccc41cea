"""Every URL the bot builds: GitHub API paths and the links it renders, from validated parts, percent-encoded."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlencode, urlsplit

# What may stay as written in a path segment or a query value of a link the bot renders: RFC 3986's unreserved
# characters. Everything else (`()[]*<>` and spaces among them, which Markdown reads) is percent-encoded.
UNRESERVED = "-._~"
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


class Slashed(str):
    """A path segment whose slashes are kept (a file path in a repository): `api(..., Slashed("a/b.yaml"))`."""


def segment(value: str | int) -> str:
    text = str(value)
    if isinstance(value, Slashed):
        return "/".join(quote(part, safe="") for part in text.split("/"))
    return quote(text, safe="")


def query_string(query: Mapping[str, str | int | None]) -> str:
    """`?k=v&…` with every value percent-encoded; None values are left out; "" when nothing is left."""
    kept = {key: str(value) for key, value in query.items() if value is not None}
    return "?" + urlencode(kept, quote_via=quote, safe="") if kept else ""


def api(*segments: str | int, **query: str | int | None) -> str:
    """A GitHub REST path: `api("repos", owner, name, "pulls", 3, "files", per_page=100)`. Each segment is one
    path segment (a `/` in it is encoded) unless it is `Slashed`."""
    return "/" + "/".join(segment(s) for s in segments) + query_string(query)


def repo_api(repo: str, *segments: str | int, **query: str | int | None) -> str:
    """`api("repos", owner, name, ...)` for a full name `owner/name` (checked: one slash, GitHub's characters)."""
    if not REPOSITORY.fullmatch(repo):
        raise ValueError(f"not a repository full name: {repo!r}")
    owner, name = repo.split("/")
    return api("repos", owner, name, *segments, **query)


def web(base: str, *segments: str | int, **query: str | int | None) -> str:
    """A link under `base` (a URL the bot knows: the repository's html_url, the results viewer from the policy),
    with each segment and query value percent-encoded."""
    path = "/".join(segment(s) for s in segments)
    return base.rstrip("/") + ("/" + path if path else "") + query_string(query)


# The results viewer's pages of a run (policy `results.viewer`): performance and accuracy.
VIEWER_PAGES = {"perf_url": "inference", "eval_url": "evaluation"}


def viewer_links(viewer: str, run_id: int) -> dict[str, str]:
    """The results viewer's pages of `run_id`, by VIEWER_PAGES key."""
    return {key: web(viewer, page, unofficialRun=run_id) for key, page in VIEWER_PAGES.items()}


def checked_link(url: object, hosts: Iterable[str], *, max_length: int = 2048) -> str | None:
    """An outside link (a callback's results link), rebuilt from its parts if it is `https` on one of `hosts`
    (case-insensitive, no port, no user info): every path segment and the query re-encoded so that no character
    Markdown reads survives, the fragment dropped. None when it is anything else."""
    if not isinstance(url, str) or len(url) > max_length or not url.isascii() or not url.isprintable():
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    allowed = {h.lower() for h in hosts}
    if parts.scheme != "https" or not host or host not in allowed or port is not None or "@" in parts.netloc:
        return None
    path = "/".join(_reencode(piece) for piece in parts.path.split("/"))
    query = (
        "&".join("=".join(_reencode(side) for side in pair.split("=", 1)) for pair in parts.query.split("&") if pair)
        if parts.query
        else ""
    )
    return f"https://{host}{path or '/'}" + (f"?{query}" if query else "")


def host_of(url: str) -> str:
    """The host of a URL the bot was configured with (the results viewer, the repository's html_url)."""
    return (urlsplit(url).hostname or "").lower()


def _reencode(piece: str) -> str:
    """`piece` with its existing %XX escapes kept and every other character outside UNRESERVED encoded."""
    out, pos = [], 0
    for match in _ENCODED.finditer(piece):
        out.append(quote(piece[pos : match.start()], safe=UNRESERVED))
        out.append(match.group().upper())
        pos = match.end()
    out.append(quote(piece[pos:], safe=UNRESERVED))
    return "".join(out)

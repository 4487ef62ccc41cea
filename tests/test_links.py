"""The one URL builder (bot/rules/links.py): API paths and query values percent-encoded, outside links rebuilt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.rules import links
from bot.rules.links import Slashed, api, checked_link, repo_api, web

VIEWER = "inferencex.semianalysis.com"


@pytest.mark.parametrize(
    "built, expected",
    [
        (
            repo_api("acme/InferenceX", "actions", "workflows", "run-sweep.yml", "runs", branch="recipe#frag"),
            "/repos/acme/InferenceX/actions/workflows/run-sweep.yml/runs?branch=recipe%23frag",
        ),
        (
            repo_api("acme/InferenceX", "actions", "workflows", "run-sweep.yml", "runs", branch="recipe&event=push"),
            "/repos/acme/InferenceX/actions/workflows/run-sweep.yml/runs?branch=recipe%26event%3Dpush",
        ),
        (
            repo_api("acme/InferenceX", "contents", Slashed("inferencex-e2e/perf changelog.yaml"), ref="release/1.0"),
            "/repos/acme/InferenceX/contents/inferencex-e2e/perf%20changelog.yaml?ref=release%2F1.0",
        ),
        (
            repo_api("acme/InferenceX", "collaborators", "a/b", "permission"),
            "/repos/acme/InferenceX/collaborators/a%2Fb/permission",
        ),
        (
            repo_api("acme/InferenceX", "pulls", 3, "files", per_page=100, page=None),
            "/repos/acme/InferenceX/pulls/3/files?per_page=100",
        ),
        (
            api("orgs", "acme", "teams", "amd reviewers", "memberships", "x"),
            "/orgs/acme/teams/amd%20reviewers/memberships/x",
        ),
    ],
)
def test_api_paths_encode_every_segment_and_value(built, expected):
    """Regression: a head branch `recipe#frag` sent only `branch=recipe`, and `recipe&event=push` added a filter."""
    assert built == expected


def test_a_repository_name_that_is_not_owner_slash_name_is_refused():
    with pytest.raises(ValueError):
        repo_api("acme/x/../y", "pulls")


def test_web_links_encode_their_parts():
    assert (
        web("https://inferencex.semianalysis.com/", "inference", unofficialRun=12)
        == "https://inferencex.semianalysis.com/inference?unofficialRun=12"
    )
    assert web("https://github.com/acme/x", "actions", "runs", "1)") == "https://github.com/acme/x/actions/runs/1%29"


@pytest.mark.parametrize(
    "url, expected",
    [
        (
            "https://inferencex.semianalysis.com/inference?unofficialRun=123",
            "https://inferencex.semianalysis.com/inference?unofficialRun=123",
        ),
        ("https://INFERENCEX.semianalysis.com/r/a%20b", "https://inferencex.semianalysis.com/r/a%20b"),
        # a phishing payload once taken for a results link: the host is right, the Markdown around it is not kept
        (
            "https://inferencex.semianalysis.com/r)**[Sign in again](https://evil.example/login)**",
            "https://inferencex.semianalysis.com/r%29%2A%2A%5BSign%20in%20again%5D%28https%3A//evil.example/login%29%2A%2A",
        ),
        ("https://inferencex.semianalysis.com/x#frag", "https://inferencex.semianalysis.com/x"),
        ("https://evil.example/inference", None),
        ("http://inferencex.semianalysis.com/x", None),
        ("https://inferencex.semianalysis.com:8443/x", None),
        ("https://user@inferencex.semianalysis.com/x", None),
        ("https://inferencex.semianalysis.com.evil.example/x", None),
        ("https://inferencex.semianalysis.com/\nx", None),
        ("javascript:alert(1)", None),
        (12, None),
        ("https://[::1/x", None),
    ],
)
def test_checked_links_are_rebuilt_on_allowed_hosts_only(url, expected):
    assert checked_link(url, [VIEWER]) == expected


MARKDOWN = set("()[]<>*`!|\\\"' \n")  # `_` is unreserved, and inert inside a link


@given(st.text(max_size=200))
def test_no_character_markdown_reads_survives_a_checked_link(tail):
    """Property: whatever follows the host, the rebuilt link holds no character that could end a Markdown link
    or start markup, so `[text](link)` can never be broken out of."""
    found = checked_link(f"https://{VIEWER}/{tail}", [VIEWER])
    if found is not None:
        assert not MARKDOWN & set(found), found
        assert links.host_of(found) == VIEWER

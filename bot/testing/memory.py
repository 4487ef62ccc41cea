"""`InMemoryGitHub`: every resource mixin over the transport, as one stateful fake of GitHub's REST API."""

from __future__ import annotations

from bot.testing.actions import ActionsMixin
from bot.testing.apps import AppsMixin
from bot.testing.checks import ChecksMixin
from bot.testing.git_data import GitDataMixin
from bot.testing.issues import IssuesMixin
from bot.testing.labels import LabelsMixin
from bot.testing.manifests import ManifestsMixin
from bot.testing.payloads import PayloadsMixin
from bot.testing.pulls import PullsMixin
from bot.testing.reactions import ReactionsMixin
from bot.testing.repos import ReposMixin
from bot.testing.reviews import ReviewsMixin


class InMemoryGitHub(
    PayloadsMixin,
    ChecksMixin,
    ActionsMixin,
    ReactionsMixin,
    LabelsMixin,
    IssuesMixin,
    GitDataMixin,
    PullsMixin,
    ReposMixin,
    ReviewsMixin,
    AppsMixin,
    ManifestsMixin,
):
    """GitHub as far as sweepbot uses it. `handle` is an httpx MockTransport / respx side effect.

    Seeding helpers (add_repo, add_pull, add_comment, add_workflow...) build state; inspection helpers
    (comments, issue_labels, runs, check_runs...) read it; fail_next / raise_next answer before a route
    acts, fail_after_commit / raise_after_commit after it acted; revoke_tokens and set_down break auth
    and the whole service. Every request is recorded in `requests`. The manifest flow's web pages are
    served by bot/testing/server.py over the methods of ManifestsMixin.
    """

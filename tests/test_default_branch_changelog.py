"""The default-branch rule of docs/spec.md, "The performance changelog", on each push to the default branch: a
`changelog` check run on the pushed commit with an annotation per line, and one issue naming each non-canonical
`pr-link` and the PR that should carry it, found again and updated, closed when the file is fixed."""

from __future__ import annotations

import pytest
from harness import REPO

from bot.core import offload
from bot.rules.markers import marker
from handlers import default_branch_changelog
from handlers.registry import router_of

CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
HISTORY = (
    b'- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n    - "Older recipe"\n'
    b"  pr-link: " + PREFIX.encode() + b"1\n"
)


def entry(link: str, key: str = "dsr1-fp8-mi355x-sglang") -> bytes:
    return (f'\n- config-keys:\n    - {key}\n  description:\n    - "New recipe"\n  pr-link: {link}\n').encode()


SHA = {n: f"{n:x}" * 40 for n in range(1, 10)}


@pytest.fixture
def make_harness(make_harness):
    async def make(**changes):
        return await make_harness(**{"router": router_of("default_branch_changelog"), **changes})

    return make


def merged_pull(github, number: int, merge_sha: str) -> None:
    """PR `number` merged into main as commit `merge_sha` (what `GET /commits/{sha}/pulls` finds)."""
    github.add_pull(REPO, number=number, user="partner", head_ref=f"recipe-{number}", files=[CHANGELOG])
    github.update_pull(
        REPO, number, state="closed", merged=True, merged_at="2026-01-02T00:00:00Z", merge_commit_sha=merge_sha
    )


async def push(h, after: str, content: bytes | None, *, before: str, commits=None, ref: str = "refs/heads/main"):
    if content is not None:
        h.github.set_file(REPO, CHANGELOG, content, ref=after)
    commits = [{"modified": [CHANGELOG]}] if commits is None else commits
    payload = h.github.push_payload(REPO, ref=ref, after=after, before=before, commits=commits, sender="maintainer")
    await h.deliver("push", payload)


def open_issues(github) -> list[dict]:
    return [
        i
        for i in github.issues(REPO)
        if "pull_request" not in i and i["state"] == "open" and i["body"].startswith(marker("changelog-default-branch"))
    ]


def changelog_check(github, sha: str) -> dict:
    [found] = [c for c in github.check_runs(REPO, sha) if c["name"] == "changelog"]
    return found


async def test_an_xxx_link_opens_the_issue_naming_its_pr_and_a_fix_closes_it(harness):
    """The whole round for maintainers: a push with an `XXX` link opens the issue (the PR that merged the line
    named, with its canonical link); a later push that fixes it passes the check and closes the issue."""
    github = harness.github
    github.set_file(REPO, CHANGELOG, HISTORY, ref=SHA[1])
    merged_pull(github, 42, SHA[2])
    await push(harness, SHA[2], HISTORY + entry("XXX"), before=SHA[1])

    check = changelog_check(github, SHA[2])
    assert check["conclusion"] == "failure"
    assert check["output"]["title"].startswith("The changelog has 1 problem(s) on the default branch")
    [note] = github.check_annotations(REPO, check["id"])
    assert (note["path"], note["start_line"]) == (CHANGELOG, 11)
    [issue] = open_issues(github)
    assert issue["user"]["login"] == github.bot_login
    assert issue["title"].startswith("sweepbot: the performance changelog on the default branch")
    body = issue["body"]
    assert f"| `XXX` | [#42](https://github.com/{REPO}/pull/42) | `{PREFIX}42` |" in body
    assert f"/blob/{SHA[2]}/{CHANGELOG}#L11)" in body and "## 中文" in body

    merged_pull(github, 60, SHA[3])
    await push(harness, SHA[3], HISTORY + entry(f"{PREFIX}42"), before=SHA[2])

    assert changelog_check(github, SHA[3])["conclusion"] == "success"
    assert open_issues(github) == []
    assert [i["state"] for i in github.issues(REPO) if i["number"] == issue["number"]] == ["closed"]


async def test_the_same_issue_is_updated_and_remembers_the_pr_of_an_older_line(harness):
    """A second bad push edits the one open issue; the line the first push brought keeps its PR (#42, from the
    issue's record), the new line names the new PR (#70)."""
    github = harness.github
    github.set_file(REPO, CHANGELOG, HISTORY, ref=SHA[1])
    merged_pull(github, 42, SHA[2])
    first = HISTORY + entry("XXX")
    await push(harness, SHA[2], first, before=SHA[1])
    [issue] = open_issues(github)

    merged_pull(github, 70, SHA[3])
    await push(harness, SHA[3], first + entry(f"{PREFIX}XXX", key="other"), before=SHA[2])

    [again] = open_issues(github)
    assert again["number"] == issue["number"]
    assert f"| `XXX` | [#42](https://github.com/{REPO}/pull/42) | `{PREFIX}42` |" in again["body"]
    assert f"| `{PREFIX}XXX` | [#70](https://github.com/{REPO}/pull/70) | `{PREFIX}70` |" in again["body"]
    assert len(github.check_annotations(REPO, changelog_check(github, SHA[3])["id"])) == 2


async def test_a_direct_push_names_no_pr_and_a_redelivery_writes_nothing_new(harness):
    github = harness.github
    await push(harness, SHA[2], HISTORY + entry("TBD"), before=SHA[1])  # no PR merged it, no file before
    [issue] = open_issues(github)
    assert "| `TBD` | not known: the PR that merged this line |" in issue["body"]

    github.reset_requests()
    await push(harness, SHA[2], None, before=SHA[1])  # the same push delivered again
    assert [r for r in github.writes if not r.path.startswith("/app/")] == []
    assert len(open_issues(github)) == 1


async def test_a_capped_push_payload_is_checked_anyway(harness):
    """20 commits (the payload's cap) that do not list the changelog: the bot cannot tell, so it reads it."""
    github = harness.github
    await push(harness, SHA[2], HISTORY + entry("XXX"), before=SHA[1], commits=[{"modified": ["README.md"]}] * 20)
    assert changelog_check(github, SHA[2])["conclusion"] == "failure"
    assert len(open_issues(github)) == 1


@pytest.mark.parametrize(
    "ref, commits",
    [
        ("refs/heads/feature", None),  # not the default branch
        ("refs/tags/v1", None),
        ("refs/heads/main", [{"modified": ["README.md"]}]),  # the changelog not touched
        ("refs/heads/main", [{"removed": [CHANGELOG]}]),
    ],
)
async def test_other_pushes_read_and_write_nothing(harness, ref, commits):
    github = harness.github
    github.reset_requests()
    await push(harness, SHA[2], HISTORY + entry("XXX"), before=SHA[1], commits=commits, ref=ref)
    assert github.count("GET", r"/contents/inferencex-e2e/") == 0
    assert github.check_runs(REPO) == [] and open_issues(github) == []


async def test_a_big_changelog_is_checked_through_offload_and_an_unfinished_check_says_so(harness, monkeypatch):
    """Bounded work: the check goes through bot/core/offload.py with the file's size; when the worker does not
    finish, the check run fails with the `too-complex` (unfinished) error instead of the delivery failing."""
    sizes = []

    async def failing(fn, *args, size, **kwargs):
        sizes.append((fn.__name__, size))
        raise offload.OffloadFailed("too slow")

    monkeypatch.setattr(default_branch_changelog.offload, "run", failing)
    content = HISTORY + entry("XXX")
    await push(harness, SHA[2], content, before=SHA[1])
    assert sizes == [("check_default_branch", len(content))]
    check = changelog_check(harness.github, SHA[2])
    assert check["conclusion"] == "failure"
    assert "the check did not finish in the time a check may take" in check["output"]["summary"]


@pytest.mark.parametrize(
    "conclusion, english, chinese",
    [
        ("success", "The changelog passes the default-branch rules", "changelog 符合默认分支规则"),
        ("failure", "The changelog has 3 problem(s) on the default branch", "默认分支上的 changelog 有 3 个问题"),
    ],
)
def test_check_titles_in_both_languages(conclusion, english, chinese):
    from bot.core.templates import Templates

    assert Templates().title("changelog_check", conclusion=conclusion, count=3) == f"{english} / {chinese}"

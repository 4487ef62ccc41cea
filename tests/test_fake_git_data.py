"""The fake GitHub's merge API and Git Data routes (bot/testing/git_data.py) behave as GitHub does where a merge
depends on them: each route, each refusal (405, 409, 422) changing nothing, the merged state seen through
`GET pulls/{n}`, the merged files through the contents API, and the fault injection on the new routes."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

REPO = "org/bench"
FORK = "partner/bench"
LOG = "inferencex-e2e/perf-changelog.yaml"
HISTORY = b"- config-keys:\n    - a\n  description:\n    - A\n  pr-link: https://github.com/o/r/pull/1\n"
ENTRY = b"\n- config-keys:\n    - b\n  description:\n    - B\n  pr-link: XXX\n"
OWN_HEAD, FORK_HEAD = "1" * 40, "2" * 40


class Client:
    """Requests as the App's installation sends them, answered (status, JSON body)."""

    def __init__(self, github) -> None:
        github.add_token("bot-token", github.bot_login)
        self.http = httpx.Client(base_url=github.base_url, headers={"authorization": "token bot-token"})

    def __call__(self, method: str, path: str, body: Any = None, **params: str) -> tuple[int, Any]:
        answer = self.http.request(method, f"/repos/{REPO}{path}", json=body, params=params)
        return answer.status_code, answer.json() if answer.content else None


@pytest.fixture
def gh(github) -> Client:
    """main holds the README and the changelog; PR 1 from the repository's own `recipe` branch and PR 2 from a
    fork each append an entry (their heads' files are set at their head shas)."""
    github.add_repo(REPO, default_branch="main")
    github.set_file(REPO, "README.md", "# bench\n")
    github.set_file(REPO, LOG, HISTORY)
    github.add_pull(REPO, number=1, head_ref="recipe", head_sha=OWN_HEAD, files=[LOG], title="Tune B")
    github.add_pull(REPO, number=2, head_repo=FORK, head_sha=FORK_HEAD, files=[LOG], title="Tune C")
    for head in (OWN_HEAD, FORK_HEAD):
        github.set_file(REPO, "README.md", "# bench\n", ref=head)
        github.set_file(REPO, LOG, HISTORY + ENTRY, ref=head)
    client = Client(github)
    github.reset_requests()
    return client


def main_head(gh: Client) -> str:
    status, ref = gh("GET", "/git/ref/heads/main")
    assert status == 200 and ref["ref"] == "refs/heads/main" and ref["object"]["type"] == "commit"
    return ref["object"]["sha"]


def file_on(gh: Client, path: str, ref: str) -> bytes | None:
    status, body = gh("GET", f"/contents/{path}", ref=ref)
    return base64.b64decode(body["content"]) if status == 200 else None


def blob(gh: Client, data: bytes) -> str:
    status, body = gh("POST", "/git/blobs", {"content": base64.b64encode(data).decode(), "encoding": "base64"})
    assert status == 201
    return body["sha"]


# -- PUT pulls/{n}/merge ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method, parents", [("squash", 1), ("merge", 2), ("rebase", 1)])
def test_the_merge_api_merges_the_head_into_the_base(github, gh, method, parents):
    before = main_head(gh)
    assert gh("GET", "/pulls/1/merge")[0] == 404

    status, answer = gh("PUT", "/pulls/1/merge", {"sha": OWN_HEAD, "merge_method": method})

    assert status == 200 and answer["merged"] is True and answer["message"] == "Pull Request successfully merged"
    sha = answer["sha"]
    pull = gh("GET", "/pulls/1")[1]
    assert (pull["merged"], pull["state"], pull["merge_commit_sha"]) == (True, "closed", sha)
    assert pull["merged_at"] and pull["closed_at"] and pull["merged_by"]["login"] == github.bot_login
    assert gh("GET", "/pulls/1/merge")[0] == 204
    assert main_head(gh) == sha
    commit = gh("GET", f"/git/commits/{sha}")[1]
    assert [p["sha"] for p in commit["parents"]] == [before, OWN_HEAD][:parents]
    assert file_on(gh, LOG, "main") == HISTORY + ENTRY == file_on(gh, LOG, sha)  # the head's files, on main
    assert file_on(gh, "README.md", "main") == b"# bench\n"
    assert file_on(gh, LOG, before) == HISTORY  # the commit main left keeps its files
    assert [e["event"] for e in github.events(REPO, 1)][-2:] == ["merged", "closed"]


def test_a_squash_merge_is_titled_after_the_pr_unless_told(gh):
    sha = gh("PUT", "/pulls/1/merge", {"merge_method": "squash"})[1]["sha"]
    assert gh("GET", f"/git/commits/{sha}")[1]["message"] == "Tune B (#1)"
    sha = gh("PUT", "/pulls/2/merge", {"commit_title": "Tune C, reusing run 7", "commit_message": "[skip-sweep]"})[1][
        "sha"
    ]
    assert gh("GET", f"/git/commits/{sha}")[1]["message"] == "Tune C, reusing run 7\n\n[skip-sweep]"


REFUSALS = [
    # (id, how the PR is set up, body, status, message)
    ("head-moved", {}, {"sha": "f" * 40}, 409, "Head branch was modified. Review and try the merge again."),
    ("not-mergeable", {"mergeable": False}, {"sha": OWN_HEAD}, 405, "Pull Request is not mergeable"),
    ("unmergeable-beats-head-moved", {"mergeable": False}, {"sha": "f" * 40}, 405, "Pull Request is not mergeable"),
    ("closed", {"state": "closed"}, {}, 405, "Pull Request is not mergeable"),
    ("draft", {"draft": True}, {"sha": OWN_HEAD}, 405, "Pull Request is still a draft"),
    ("unknown-merge-method", {}, {"merge_method": "fast-forward"}, 422, None),
    ("sha-not-a-string", {}, {"sha": 7}, 422, None),
]


@pytest.mark.parametrize("setup, body, status, message", [pytest.param(*r[1:], id=r[0]) for r in REFUSALS])
def test_a_refused_merge_changes_nothing(github, gh, setup, body, status, message):
    if setup:
        github.update_pull(REPO, 1, **setup)
    before = main_head(gh)

    got, answer = gh("PUT", "/pulls/1/merge", body)

    assert got == status
    if message is not None:
        assert answer["message"] == message
    pull = gh("GET", "/pulls/1")[1]
    assert pull["merged"] is False and pull["merge_commit_sha"] is None
    assert main_head(gh) == before and file_on(gh, LOG, "main") == HISTORY


def test_a_merge_whose_answer_was_lost_is_done(github, gh):
    """GitHub acted and the answer was lost: the PR is merged, which a retry of the same merge finds (405)."""
    github.fail_after_commit("PUT", r"/pulls/1/merge$", 502)

    assert gh("PUT", "/pulls/1/merge", {"sha": OWN_HEAD, "merge_method": "squash"})[0] == 502

    recorded = [r for r in github.requests if r.method == "PUT"]
    assert [(r.status, r.route_status) for r in recorded] == [(502, 200)]
    assert gh("GET", "/pulls/1")[1]["merged"] is True and gh("GET", "/pulls/1/merge")[0] == 204
    assert gh("PUT", "/pulls/1/merge", {"sha": OWN_HEAD})[0] == 405


def test_a_merge_refused_before_it_ran_can_be_sent_again(github, gh):
    github.fail_next("PUT", r"/pulls/1/merge$", 503)
    assert gh("PUT", "/pulls/1/merge", {"sha": OWN_HEAD})[0] == 503
    assert gh("GET", "/pulls/1")[1]["merged"] is False
    assert gh("PUT", "/pulls/1/merge", {"sha": OWN_HEAD})[0] == 200


# -- Git Data: a fork's PR merged by a commit of both heads and a fast-forward ------------------------------------


def test_a_fork_pr_is_merged_through_git_data(github, gh):
    base = main_head(gh)
    status, base_commit = gh("GET", f"/git/commits/{base}")
    assert status == 200
    status, tree = gh("GET", f"/git/trees/{base_commit['tree']['sha']}", recursive="1")
    assert status == 200 and {e["path"] for e in tree["tree"] if e["type"] == "blob"} == {"README.md", LOG}

    merged = HISTORY + ENTRY.replace(b"XXX", b"https://github.com/o/r/pull/2")
    status, new_tree = gh(
        "POST",
        "/git/trees",
        {
            "base_tree": base_commit["tree"]["sha"],
            "tree": [{"path": LOG, "mode": "100644", "type": "blob", "sha": blob(gh, merged)}],
        },
    )
    assert status == 201
    status, commit = gh(
        "POST",
        "/git/commits",
        {"message": "Merge #2 [skip-sweep]", "tree": new_tree["sha"], "parents": [base, FORK_HEAD]},
    )
    assert status == 201 and [p["sha"] for p in commit["parents"]] == [base, FORK_HEAD]
    assert gh("GET", "/pulls/2")[1]["merged"] is False  # a commit alone merges nothing

    status, ref = gh("PATCH", "/git/refs/heads/main", {"sha": commit["sha"], "force": False})

    assert status == 200 and ref["object"]["sha"] == commit["sha"] == main_head(gh)
    pull = gh("GET", "/pulls/2")[1]
    assert (pull["merged"], pull["state"], pull["merge_commit_sha"]) == (True, "closed", commit["sha"])
    assert gh("GET", "/pulls/1")[1]["state"] == "open"  # another PR into main is left alone
    assert file_on(gh, LOG, "main") == merged and file_on(gh, "README.md", "main") == b"# bench\n"
    assert gh("GET", f"/git/commits/{commit['sha']}")[1]["tree"]["sha"] == new_tree["sha"]
    assert [r.path for r in github.writes] == [
        f"/repos/{REPO}/git/{p}" for p in ("blobs", "trees", "commits", "refs/heads/main")
    ]


def test_a_ref_update_that_is_not_a_fast_forward_is_refused(github, gh):
    base = main_head(gh)
    tree = gh("GET", "/git/trees/main")[1]["sha"]
    stray = gh("POST", "/git/commits", {"message": "not on main", "tree": tree, "parents": [FORK_HEAD]})[1]["sha"]

    status, answer = gh("PATCH", "/git/refs/heads/main", {"sha": stray})

    assert (status, answer["message"]) == (422, "Update is not a fast forward")
    assert main_head(gh) == base and gh("GET", "/pulls/2")[1]["merged"] is False
    # forced, it moves (and main now reaches the fork's head: GitHub shows that PR merged)
    assert gh("PATCH", "/git/refs/heads/main", {"sha": stray, "force": True})[0] == 200
    assert main_head(gh) == stray and gh("GET", "/pulls/2")[1]["merged"] is True


def test_updating_a_prs_own_branch_moves_its_head_and_the_merge_pins_it(github, gh):
    """The same-repository way: the bot commits the resolved changelog on the PR's branch (a fast-forward of it),
    then merges with the new head's sha; the old sha is refused as moved."""
    base = main_head(gh)
    resolved = HISTORY + ENTRY.replace(b"XXX", b"https://github.com/o/r/pull/1")
    tree = gh(
        "POST",
        "/git/trees",
        {
            "base_tree": gh("GET", f"/git/trees/{OWN_HEAD}")[1]["sha"],
            "tree": [{"path": LOG, "mode": "100644", "type": "blob", "content": resolved.decode()}],
        },
    )[1]["sha"]
    update = gh(
        "POST", "/git/commits", {"message": "Merge main [skip-sweep]", "tree": tree, "parents": [OWN_HEAD, base]}
    )[1]["sha"]

    assert gh("PATCH", "/git/refs/heads/recipe", {"sha": update})[0] == 200

    pull = gh("GET", "/pulls/1")[1]
    assert pull["head"]["sha"] == update and pull["state"] == "open" and github.pull_commits(REPO, 1)[-1] == update
    assert gh("PUT", "/pulls/1/merge", {"sha": OWN_HEAD})[0] == 409
    status, answer = gh("PUT", "/pulls/1/merge", {"sha": update, "merge_method": "squash"})
    assert status == 200 and file_on(gh, LOG, "main") == resolved


def test_a_ref_update_whose_answer_was_lost_moved_the_branch(github, gh):
    base = main_head(gh)
    tree = gh("GET", "/git/trees/main")[1]["sha"]
    sha = gh("POST", "/git/commits", {"message": "m", "tree": tree, "parents": [base, FORK_HEAD]})[1]["sha"]
    github.fail_after_commit("PATCH", r"/git/refs/heads/main$", 504)

    assert gh("PATCH", "/git/refs/heads/main", {"sha": sha})[0] == 504

    assert main_head(gh) == sha and gh("GET", "/pulls/2")[1]["merged"] is True
    assert gh("PATCH", "/git/refs/heads/main", {"sha": sha})[0] == 200  # sent again: already there


# -- each Git Data route on its own ---------------------------------------------------------------------------------


def test_blobs_in_either_encoding_are_read_back(gh):
    status, made = gh("POST", "/git/blobs", {"content": "héllo\n"})
    assert status == 201 and made["url"].endswith(f"/git/blobs/{made['sha']}")
    assert blob(gh, "héllo\n".encode()) == made["sha"]
    status, read = gh("GET", f"/git/blobs/{made['sha']}")
    assert status == 200 and base64.b64decode(read["content"]) == "héllo\n".encode() and read["size"] == 7


def test_trees_list_folders_and_build_on_a_base_tree(gh):
    status, top = gh("GET", "/git/trees/main")
    assert status == 200 and [(e["path"], e["type"]) for e in top["tree"]] == [
        ("README.md", "blob"),
        ("inferencex-e2e", "tree"),
    ]
    folder = top["tree"][1]
    assert [e["path"] for e in gh("GET", f"/git/trees/{folder['sha']}")[1]["tree"]] == ["perf-changelog.yaml"]

    status, tree = gh(
        "POST",
        "/git/trees",
        {
            "base_tree": top["sha"],
            "tree": [
                {"path": "README.md", "mode": "100644", "type": "blob", "sha": None},
                {"path": "copy", "mode": "040000", "type": "tree", "sha": folder["sha"]},
                {"path": "run.sh", "mode": "100755", "type": "blob", "content": "echo\n"},
            ],
        },
    )

    assert status == 201
    listed = gh("GET", f"/git/trees/{tree['sha']}", recursive="1")[1]["tree"]
    assert [(e["path"], e["mode"]) for e in listed] == [
        ("copy", "040000"),
        ("copy/perf-changelog.yaml", "100644"),
        ("inferencex-e2e", "040000"),
        (LOG, "100644"),
        ("run.sh", "100755"),
    ]
    # without a base tree, only what is given
    alone = gh("POST", "/git/trees", {"tree": [{"path": "a/b.txt", "mode": "100644", "type": "blob", "content": "b"}]})[
        1
    ]
    assert [e["path"] for e in gh("GET", f"/git/trees/{alone['sha']}", recursive="1")[1]["tree"]] == ["a", "a/b.txt"]


VALIDATION = [
    # (id, method, path, body, message the answer starts with)
    ("blob-without-content", "POST", "/git/blobs", {"encoding": "utf-8"}, 'Invalid request.\n\n"content"'),
    ("blob-unknown-encoding", "POST", "/git/blobs", {"content": "x", "encoding": "latin-1"}, "Invalid request."),
    ("blob-bad-base64", "POST", "/git/blobs", {"content": "@@@", "encoding": "base64"}, "Invalid request."),
    ("tree-without-entries", "POST", "/git/trees", {"base_tree": None}, 'Invalid request.\n\n"tree"'),
    ("tree-unknown-base", "POST", "/git/trees", {"base_tree": "e" * 40, "tree": []}, "Invalid request."),
    (
        "tree-unknown-blob",
        "POST",
        "/git/trees",
        {"tree": [{"path": "a", "mode": "100644", "type": "blob", "sha": "e" * 40}]},
        "Invalid request.",
    ),
    (
        "tree-entry-without-mode",
        "POST",
        "/git/trees",
        {"tree": [{"path": "a", "type": "blob", "content": "x"}]},
        'Invalid request.\n\n"mode"',
    ),
    (
        "tree-entry-sha-and-content",
        "POST",
        "/git/trees",
        {"tree": [{"path": "a", "mode": "100644", "type": "blob", "sha": None, "content": "x"}]},
        "Invalid request.",
    ),
    (
        "tree-entry-absolute-path",
        "POST",
        "/git/trees",
        {"tree": [{"path": "/a", "mode": "100644", "type": "blob", "content": "x"}]},
        "Invalid request.",
    ),
    ("commit-without-tree", "POST", "/git/commits", {"message": "m"}, 'Invalid request.\n\n"tree"'),
    ("commit-unknown-tree", "POST", "/git/commits", {"message": "m", "tree": "e" * 40}, "Tree SHA does not exist"),
    (
        "commit-unknown-parent",
        "POST",
        "/git/commits",
        {"message": "m", "tree": "TREE", "parents": ["e" * 40]},
        "Parent SHA does not exist or is not a commit object",
    ),
    ("ref-without-sha", "PATCH", "/git/refs/heads/main", {"force": False}, 'Invalid request.\n\n"sha"'),
    ("ref-force-not-boolean", "PATCH", "/git/refs/heads/main", {"sha": OWN_HEAD, "force": "no"}, "Invalid request."),
    ("ref-of-no-branch", "PATCH", "/git/refs/heads/nowhere", {"sha": OWN_HEAD}, "Reference does not exist"),
    ("ref-to-no-commit", "PATCH", "/git/refs/heads/main", {"sha": "e" * 40}, "Object does not exist"),
]


@pytest.mark.parametrize("method, path, body, message", [pytest.param(*v[1:], id=v[0]) for v in VALIDATION])
def test_bodies_github_would_refuse_get_422_and_change_nothing(github, gh, method, path, body, message):
    before = main_head(gh)
    if body.get("tree") == "TREE":
        body = {**body, "tree": gh("GET", "/git/trees/main")[1]["sha"]}

    status, answer = gh(method, path, body)

    assert status == 422 and answer["message"].startswith(message), answer
    assert main_head(gh) == before and gh("GET", "/pulls/2")[1]["merged"] is False


def test_unknown_refs_and_trees_are_not_found(gh):
    assert gh("GET", "/git/ref/heads/nowhere")[0] == 404
    assert gh("GET", f"/git/trees/{'e' * 40}")[0] == 404
    assert gh("GET", f"/git/commits/{'e' * 40}")[0] == 404
    assert gh("GET", "/pulls/9/merge")[0] == 404 and gh("PUT", "/pulls/9/merge", {})[0] == 404


def test_branch_refs_follow_set_branch_and_slashes(github, gh):
    github.set_branch(REPO, "release/1.2", OWN_HEAD)
    status, ref = gh("GET", "/git/ref/heads/release/1.2")
    assert status == 200 and ref["ref"] == "refs/heads/release/1.2" and ref["object"]["sha"] == OWN_HEAD


def test_a_prs_commit_has_the_tree_of_the_files_set_at_its_sha(gh):
    status, commit = gh("GET", f"/git/commits/{OWN_HEAD}")
    assert status == 200 and commit["message"] == "Tune B"  # as PullsMixin shows a PR's commit, with a tree
    listed = gh("GET", f"/git/trees/{commit['tree']['sha']}", recursive="1")[1]["tree"]
    blobs = {e["path"]: e["sha"] for e in listed if e["type"] == "blob"}
    assert set(blobs) == {"README.md", LOG}
    assert base64.b64decode(gh("GET", f"/git/blobs/{blobs[LOG]}")[1]["content"]) == HISTORY + ENTRY

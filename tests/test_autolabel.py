"""Automatic labels from path rules: added on opened / synchronize, created from the policy when the
repository lacks them, removed only when the bot added them itself and their rule no longer matches."""

from __future__ import annotations

import pytest
from harness import REPO

from bot.core.config import default_policy
from bot.effects.actions import AddLabels, EnsureLabel, RemoveLabel
from handlers.autolabel import label_changes, last_labeler, plan

RULES = default_policy().autolabels
AMD = "configs/amd-master.yaml"
NVIDIA = "configs/nvidia-master.yaml"
CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
UPSTREAM_AMD = "inferencex-e2e/configs/amd-master.yaml"  # where upstream keeps them now
UPSTREAM_NVIDIA = "inferencex-e2e/configs/nvidia-master.yaml"


def names(rules) -> list[str]:
    return [r.label for r in rules]


# ---- the pure rules ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "files, current, add, stale",
    [
        ([AMD], [], ["amd"], []),
        ([NVIDIA, CHANGELOG], [], ["nvidia", "perf-changelog"], []),
        ([AMD, NVIDIA, CHANGELOG], ["amd"], ["nvidia", "perf-changelog"], []),
        ([AMD], ["amd"], [], []),
        ([AMD], ["AMD"], [], []),  # GitHub label names ignore case
        (["README.md"], ["amd", "nvidia", "full-sweep-enabled"], [], ["amd", "nvidia"]),
        (["README.md"], ["Perf-Changelog"], [], ["perf-changelog"]),
        (["configs/amd-x/y.yaml"], [], ["amd"], []),  # configs/amd-* is a directory too
        (["sub/configs/amd-master.yaml"], [], [], []),  # a pattern with a slash is anchored at the root
        (["configs/amd.yaml"], [], [], []),
        (["configs/AMD-master.yaml"], [], [], []),
        (["inferencex-e2e/other.yaml"], ["perf-changelog"], [], ["perf-changelog"]),
        ([], [], [], []),
        ([UPSTREAM_AMD], [], ["amd"], []),  # the upstream layout: configs under inferencex-e2e/
        ([UPSTREAM_NVIDIA, CHANGELOG], [], ["nvidia", "perf-changelog"], []),
        (["inferencex-e2e/configs/amd.yaml"], [], [], []),
        (["x/inferencex-e2e/configs/amd-master.yaml"], [], [], []),  # anchored at the root too
        (["inferencex-e2e/configs/other.yaml"], ["amd"], [], ["amd"]),
    ],
    ids=[
        "amd",
        "two",
        "one-present",
        "present",
        "case",
        "stale",
        "stale-case",
        "amd-dir",
        "not-root",
        "no-dash",
        "upper-path",
        "changelog-gone",
        "nothing",
        "upstream-amd",
        "upstream-nvidia",
        "upstream-no-dash",
        "upstream-not-root",
        "upstream-stale",
    ],
)
def test_label_changes(files, current, add, stale):
    got_add, got_stale = label_changes(files, current, RULES)
    assert names(got_add) == add
    assert got_stale == stale


def real_vendor_configs(real_data) -> dict[str, list[str]]:
    """The vendor master configs named in the real upstream files: the CODEOWNERS snapshot (root `configs/`) and
    the PR threads (the newer `inferencex-e2e/configs/` layout), by vendor."""
    import re

    text = (real_data / "CODEOWNERS").read_text() + "".join(
        p.read_text() for p in sorted((real_data / "threads").glob("*.txt"))
    )
    found: dict[str, list[str]] = {}
    for path in sorted(set(re.findall(r"(?<![\w/.-])((?:inferencex-e2e/)?configs/(amd|nvidia)-master\.yaml)", text))):
        found.setdefault(path[1], []).append(path[0])
    return found


def test_the_default_rules_label_the_vendor_configs_of_the_real_repository(real_data):
    """Regression: the defaults matched only a root `configs/`, so on the upstream layout (`inferencex-e2e/configs/`)
    no vendor label was ever added. Every vendor config the real files name gets its vendor's label, and only it."""
    found = real_vendor_configs(real_data)
    assert any(p.startswith("inferencex-e2e/") for paths in found.values() for p in paths)  # the layout is there
    for vendor, paths in found.items():
        for path in paths:
            assert names(label_changes([path], [], RULES)[0]) == [vendor], path


def labeled(kind: str, label: str, actor: str) -> dict:
    return {"event": kind, "label": {"name": label}, "actor": {"login": actor}}


BOT = "sweepbot[bot]"


@pytest.mark.parametrize(
    "events, who",
    [
        ([], None),
        ([labeled("labeled", "amd", BOT)], BOT),
        ([labeled("labeled", "amd", "alice")], "alice"),
        (
            [labeled("labeled", "amd", BOT), labeled("unlabeled", "amd", "alice"), labeled("labeled", "amd", "alice")],
            "alice",
        ),
        (
            [labeled("labeled", "amd", "alice"), labeled("unlabeled", "amd", "alice"), labeled("labeled", "amd", BOT)],
            BOT,
        ),
        ([labeled("labeled", "amd", BOT), labeled("unlabeled", "amd", "alice")], None),
        ([labeled("labeled", "nvidia", BOT)], None),
        ([labeled("labeled", "AMD", BOT)], BOT),
        ([{"event": "labeled", "label": None, "actor": None}], None),
    ],
    ids=["none", "bot", "human", "human-reapplied", "bot-reapplied", "removed", "other-label", "case", "malformed"],
)
def test_last_labeler(events, who):
    assert last_labeler(events, "amd") == who


def test_plan_ensures_labels_before_adding_them_in_one_request():
    amd, nvidia = RULES[0], RULES[1]
    assert plan([amd, nvidia], ["perf-changelog"], 5) == [
        EnsureLabel("amd", "ed1c24", "Touches AMD benchmark configs"),
        EnsureLabel("nvidia", "76b900", "Touches NVIDIA benchmark configs"),
        AddLabels(5, ("amd", "nvidia")),
        RemoveLabel(5, "perf-changelog"),
    ]
    assert plan([], [], 5) == []


# ---- scenarios ---------------------------------------------------------------------------------------------


def writes(github) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in github.writes if not r.path.startswith("/app/")]


async def send(h, number: int, action: str, *, delivery: str | None = None):
    await h.deliver(
        "pull_request", h.github.pull_request_payload(REPO, number, action, sender="contributor"), delivery=delivery
    )


@pytest.fixture
async def h(make_harness, github):
    github.add_repo(REPO, default_branch="main", installation_id=1)
    return await make_harness()


async def test_opened_adds_matching_labels_and_creates_them_from_the_policy(h):
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD, CHANGELOG, "README.md"])

    await send(h, 2, "opened")

    assert sorted(github.issue_labels(REPO, 2)) == ["amd", "perf-changelog"]
    labels = github.repo_labels(REPO)
    assert (labels["amd"]["color"], labels["amd"]["description"]) == ("ed1c24", "Touches AMD benchmark configs")
    assert (labels["perf-changelog"]["color"], labels["perf-changelog"]["description"]) == (
        "0e8a16",
        "Appends to the performance changelog",
    )
    assert "nvidia" not in labels
    assert [e["actor"]["login"] for e in github.events(REPO, 2)] == [github.bot_login] * 2
    assert github.count("POST", rf"^/repos/{REPO}/issues/2/labels$") == 1  # both labels in one request


async def test_an_existing_repository_label_is_used_as_it_is(h):
    github = h.github
    github.add_label(REPO, "amd", color="000000", description="Ours, keep it")
    github.add_pull(REPO, number=2, files=[AMD])

    await send(h, 2, "opened")

    assert github.issue_labels(REPO, 2) == ["amd"]
    amd = github.repo_labels(REPO)["amd"]
    assert (amd["color"], amd["description"]) == ("000000", "Ours, keep it")
    assert github.count("POST", rf"^/repos/{REPO}/labels$") == 0


async def test_a_label_created_once_is_not_looked_up_again(h):
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD])
    github.add_pull(REPO, number=3, files=[AMD])
    await send(h, 2, "opened")
    github.reset_requests()

    await send(h, 3, "opened")

    assert github.issue_labels(REPO, 3) == ["amd"]
    assert github.count(None, rf"^/repos/{REPO}/labels") == 0


async def test_a_label_created_meanwhile_by_someone_else_is_not_an_error(h):
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD])
    github.fail_next("GET", r"/labels/amd$", 404)  # looked missing, but exists by the time the bot creates it
    github.add_label(REPO, "amd", color="123456")

    await send(h, 2, "opened")

    assert github.issue_labels(REPO, 2) == ["amd"]
    assert github.repo_labels(REPO)["amd"]["color"] == "123456"


async def test_synchronize_adds_labels_for_newly_touched_paths(h):
    github = h.github
    github.add_pull(REPO, number=2, files=["README.md"])
    await send(h, 2, "opened")
    assert github.issue_labels(REPO, 2) == []

    github.pull_files(REPO, 2).append({"filename": NVIDIA, "status": "added"})
    await send(h, 2, "synchronize")

    assert github.issue_labels(REPO, 2) == ["nvidia"]


async def test_synchronize_removes_a_bot_label_whose_rule_no_longer_matches(h):
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD, CHANGELOG])
    await send(h, 2, "opened")

    github.pull_files(REPO, 2)[:] = [{"filename": CHANGELOG}]  # the amd config change was dropped
    await send(h, 2, "synchronize")

    assert github.issue_labels(REPO, 2) == ["perf-changelog"]
    assert writes(github)[-1] == ("DELETE", f"/repos/{REPO}/issues/2/labels/amd")
    assert "amd" in github.repo_labels(REPO)  # the repository label itself stays


async def test_a_label_people_applied_is_never_removed(h):
    github = h.github
    github.add_pull(REPO, number=2, files=["README.md"], labels=["amd"], user="partner")  # the author's
    github.label_issue(REPO, 2, "nvidia", actor="maintainer")
    github.label_issue(REPO, 2, "full-sweep-enabled", actor="maintainer")

    await send(h, 2, "opened")
    await send(h, 2, "synchronize")

    assert sorted(github.issue_labels(REPO, 2)) == ["amd", "full-sweep-enabled", "nvidia"]
    assert github.count("DELETE", r"/labels/") == 0


async def test_a_label_a_person_reapplied_after_the_bot_is_theirs(h):
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD])
    await send(h, 2, "opened")
    github.unlabel_issue(REPO, 2, "amd", actor="maintainer")
    github.label_issue(REPO, 2, "amd", actor="maintainer")

    github.pull_files(REPO, 2)[:] = [{"filename": "README.md"}]
    await send(h, 2, "synchronize")

    assert github.issue_labels(REPO, 2) == ["amd"]
    assert github.count("DELETE", r"/labels/") == 0


async def test_a_label_a_person_removed_comes_back_on_a_push_that_still_matches(h):
    """Path rules work like actions/labeler: while the rule matches, the label is missing, so it is added again."""
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD])
    await send(h, 2, "opened")
    github.unlabel_issue(REPO, 2, "amd", actor="maintainer")

    await send(h, 2, "synchronize")

    assert github.issue_labels(REPO, 2) == ["amd"]


async def test_synchronize_with_no_label_change_reads_the_files_and_writes_nothing(h):
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD])
    await send(h, 2, "opened")
    github.reset_requests()

    await send(h, 2, "synchronize")

    assert writes(github) == []
    assert [(r.method, r.path) for r in github.requests] == [("GET", f"/repos/{REPO}/pulls/2/files")]


async def test_a_label_that_differs_only_in_case_counts_as_present(h):
    """Regression: label names were compared case-sensitively, so a repository label `AMD` on the PR made the bot
    post `amd` again on every synchronize (GitHub treats them as one label)."""
    github = h.github
    github.add_label(REPO, "AMD")
    github.add_pull(REPO, number=2, files=[AMD], labels=["AMD"])

    await send(h, 2, "synchronize")

    assert writes(github) == []
    assert github.issue_labels(REPO, 2) == ["AMD"]


async def test_redelivered_opened_with_stale_labels_writes_nothing(h):
    """Regression: the payload of a redelivery holds the labels of the original event; autolabel trusted it and
    re-posted labels the bot had already added. It now reads the PR's labels from GitHub before any change."""
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD, CHANGELOG])
    payload = github.pull_request_payload(REPO, 2, "opened")  # labels: [] at the time of the event
    await h.deliver("pull_request", payload)
    github.reset_requests()

    await h.deliver("pull_request", payload)

    assert writes(github) == []
    assert sorted(github.issue_labels(REPO, 2)) == ["amd", "perf-changelog"]


async def test_stale_payload_does_not_remove_a_label_already_gone(h):
    github = h.github
    github.add_pull(REPO, number=2, files=[AMD])
    await send(h, 2, "opened")
    github.pull_files(REPO, 2)[:] = [{"filename": "README.md"}]
    payload = github.pull_request_payload(REPO, 2, "synchronize")  # still shows `amd`
    await h.deliver("pull_request", payload)
    assert github.issue_labels(REPO, 2) == []
    github.reset_requests()

    await h.deliver("pull_request", payload)

    assert writes(github) == []


async def test_rules_come_from_the_repository_policy(make_harness, github):
    github.add_repo(REPO, default_branch="main", installation_id=1)
    github.set_file(
        REPO,
        ".github/sweepbot.yml",
        """\
autolabels:
  - label: docs
    paths: ["*.md", "/docs/"]
    color: 0075ca
    description: Documentation only
""",
    )
    github.add_pull(REPO, number=2, files=["docs/guide.txt", AMD])
    h = await make_harness()

    await send(h, 2, "opened")

    assert github.issue_labels(REPO, 2) == ["docs"]  # the default amd rule was replaced
    assert github.repo_labels(REPO)["docs"]["color"] == "0075ca"

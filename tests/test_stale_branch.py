"""The stale-branch guard (bot/rules/stale_branch.py): its rules as tables, then the gate against the fake GitHub
with upstream's shapes: the `utils/srt-slurm` rollback (the base at `ae3d6877`, the PR back at `545233a0`), a
forward move, a diverged pointer, an unreadable submodule, a reverted recipe, a changed master-config key left
out of the changelog (and a wildcard that covers it) on upstream's real master configs, and a stale pin."""

from __future__ import annotations

import pytest
from conftest import REAL_DATA
from harness import REPO, line_with
from test_sweep_gate import no_merge_wait, repo  # noqa: F401  the fixtures this module's tests take

from bot.core.config import default_policy, parse_repo_config
from bot.rules import stale_branch as sb
from bot.rules.markers import marker
from bot.rules.master_config import read_master_configs
from bot.rules.sweep_record import Pin, SweepRecord
from bot.testing.model import blob_sha
from handlers import registry

POLICY = default_policy()
CHANGELOG = POLICY.paths.changelog
AMD_MASTER = "inferencex-e2e/configs/amd-master.yaml"
RECIPE = "inferencex-e2e/recipes/dsr1-fp4-mi355x-sglang.sh"
SRT = "utils/srt-slurm"
SRT_REPO = "acme/srt-slurm"
# upstream's shapes: v2.59.1 on the base, the exact v2.51.1 commit in the PR; the rest of each SHA is made up
ON_BASE = "ae3d6877" + "1c5e" * 8
IN_PR = "545233a0" + "9b2d" * 8
BETWEEN = [f"{n:02d}" + "e" * 38 for n in range(1, 8)]  # the upstream fixes between the two
BUMP = "b0a1" * 10  # the base commit that moved the pointer to ON_BASE
KEY = "dsr1-fp4-mi355x-sglang"
PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
HISTORY = (
    b'- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n    - "Older recipe"\n'
    b"  pr-link: " + PREFIX.encode() + b"1\n"
)


def entry(*keys: str) -> bytes:
    listed = "".join(f"    - {key}\n" for key in keys)
    return f'\n- config-keys:\n{listed}  description:\n    - "MI355X recipe"\n  pr-link: XXX\n'.encode()


def gitlink_patch(old: str, new: str) -> str:
    """A gitlink's patch as GitHub's PR file listing gives it."""
    return f"@@ -1 +1 @@\n-Subproject commit {old}\n+Subproject commit {new}"


# -- the rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "patch, move",
    [
        (gitlink_patch(ON_BASE, IN_PR), (ON_BASE, IN_PR)),
        ("@@ -1,2 +1,2 @@\n-image: a\n+image: b", None),  # a file's
        (None, None),  # GitHub leaves it out for a big diff
        (gitlink_patch(ON_BASE, IN_PR) + "\n" + "+x" * 300, None),  # too long to be a gitlink's
        ("@@ -0,0 +1 @@\n+Subproject commit " + IN_PR, None),  # a submodule added: nothing moves back
    ],
    ids=["gitlink", "file", "no patch", "too long", "added"],
)
def test_a_gitlinks_patch_gives_both_pointers(patch, move):
    assert sb.submodule_move(patch) == move


def test_upstreams_gitmodules_names_its_submodules_repository():
    text = (REAL_DATA / "gitmodules").read_text(encoding="utf-8")
    assert sb.gitmodules_repos(text, "SemiAnalysisAI/InferenceX") == {"utils/aiperf": "SemiAnalysisAI/aiperf"}


@pytest.mark.parametrize(
    "url, repo",
    [
        ("https://github.com/acme/srt-slurm.git", "acme/srt-slurm"),
        ("https://github.com/acme/srt-slurm", "acme/srt-slurm"),
        ("git@github.com:acme/srt-slurm.git", "acme/srt-slurm"),
        ("../srt-slurm.git", "SemiAnalysisAI/srt-slurm"),
        ("../../other/srt-slurm.git", None),
        ("https://gitlab.com/acme/srt-slurm.git", None),
    ],
)
def test_a_submodule_url_as_a_github_repository(url, repo):
    assert sb.github_repo(url, "SemiAnalysisAI/InferenceX") == repo


def policy_with(text: str):
    return parse_repo_config(text)


@pytest.mark.parametrize(
    "compared, policy, kind, severity",
    [
        (sb.Compared("behind", 0, 8), POLICY, sb.SUBMODULE_BEHIND, sb.REFUSE),
        (sb.Compared("diverged", 2, 3), POLICY, sb.SUBMODULE_DIVERGED, sb.REFUSE),
        (sb.Compared("ahead", 8, 0), POLICY, sb.SUBMODULE_AHEAD, sb.INFO),
        (None, POLICY, sb.SUBMODULE_UNVERIFIED, sb.WARN),
        (None, policy_with("stale_branch:\n  unverified_submodules: refuse\n"), sb.SUBMODULE_UNVERIFIED, sb.REFUSE),
        (sb.Compared("behind", 0, 8), policy_with("stale_branch:\n  submodules: warn\n"), sb.SUBMODULE_BEHIND, sb.WARN),
        (sb.Compared("behind", 0, 8), policy_with("stale_branch:\n  submodules: 'off'\n"), None, None),
        (sb.Compared("identical"), POLICY, None, None),
    ],
    ids=["behind", "diverged", "ahead", "unreadable", "unreadable, refused", "behind, warn", "off", "identical"],
)
def test_a_submodule_move(compared, policy, kind, severity):
    found = sb.submodule_finding(SRT, ON_BASE, IN_PR, SRT_REPO, compared, policy)
    assert (found.kind, found.severity) == (kind, severity) if kind else found is None


@pytest.mark.parametrize(
    "history, replaced_by",
    [
        ([("c3", "new"), ("c2", "old"), ("c1", "older")], "c3"),  # the version c3 replaced
        ([("c3", "new"), ("c2", "mid"), ("c1", "old")], "c2"),  # two changes back
        ([("c3", "old"), ("c2", "older")], None),  # the base's own content: nothing undone
        ([("c3", "new"), ("c2", None), ("c1", "old")], "c2"),  # deleted in between, then re-added by c3's parent
        ([("c3", "new")], None),  # no older version within the depth
        ([], None),
    ],
    ids=["last change", "two back", "the same as the base", "deleted between", "one version", "no history"],
)
def test_a_file_taken_back_names_the_commit_that_replaced_its_content(history, replaced_by):
    assert sb.replaced_version("old", history) == replaced_by


@pytest.mark.parametrize(
    "path, severity",
    [(RECIPE, sb.REFUSE), ("inferencex-e2e/launchers/run.sh", sb.REFUSE), ("inferencex-e2e/bench.py", sb.WARN)],
)
def test_a_revert_refuses_on_the_listed_paths_and_warns_elsewhere(path, severity):
    assert sb.reverted_finding(path, "c" * 40, POLICY).severity == severity


@pytest.fixture(scope="module")
def upstream_texts():
    return {name: (REAL_DATA / name).read_text(encoding="utf-8") for name in ("amd-master.yaml", "nvidia-master.yaml")}


def changed_image(text: str) -> str:
    """amd-master.yaml with the first block's (`dsr1-fp4-mi355x-sglang`) image bumped."""
    old = "image: lmsysorg/sglang:v0.5.12-rocm700-mi35x"
    assert text.startswith(KEY + ":\n  " + old)
    return text.replace(old, "image: lmsysorg/sglang:v0.5.13-rocm700-mi35x", 1)


@pytest.mark.parametrize(
    "entries, found",
    [
        ([(10, (KEY,))], []),
        ([(10, ("dsr1-fp4-mi355x-*",))], []),  # a wildcard covers it
        ([(10, ("dsr1-fp8-h200-sglang",))], [(sb.UNCOVERED_KEY, KEY), (sb.UNCHANGED_KEY, "dsr1-fp8-h200-sglang")]),
        ([(10, (KEY, "gptoss-*"))], [(sb.UNCHANGED_KEY, "gptoss-*")]),
        ([(10, ("DSR1-fp4-mi355x-sglang",))], [(sb.UNCOVERED_KEY, KEY), (sb.UNCHANGED_KEY, "DSR1-fp4-mi355x-sglang")]),
    ],
    ids=["named", "wildcard", "another key", "and an unchanged one", "case differs"],
)
def test_the_changelog_must_cover_every_changed_key_of_upstreams_master_configs(upstream_texts, entries, found):
    base = read_master_configs(upstream_texts)
    head = read_master_configs({**upstream_texts, "amd-master.yaml": changed_image(upstream_texts["amd-master.yaml"])})
    findings = sb.coverage_findings(sb.changed_config_keys(base, head), entries, POLICY)
    assert [(f.kind, f.params["key"]) for f in findings] == found
    assert all(f.severity == (sb.REFUSE if f.kind == sb.UNCOVERED_KEY else sb.INFO) for f in findings)


def test_an_unchanged_master_config_leaves_every_named_key_as_information(upstream_texts):
    same = read_master_configs(upstream_texts)
    findings = sb.coverage_findings(sb.changed_config_keys(same, same), [(3, (KEY,))], POLICY)
    assert [(f.kind, f.severity, f.params["line"]) for f in findings] == [(sb.UNCHANGED_KEY, sb.INFO, 3)]


@pytest.mark.parametrize(
    "files, stale",
    [
        ([RECIPE], True),
        ([CHANGELOG], False),  # the changelog alone keeps the pin
        (["inferencex-e2e/README.md", "docs/guide.md"], False),  # docs keep it
        (["README.md"], False),  # not a benchmark path
        ([CHANGELOG, AMD_MASTER], True),
        ([], False),
    ],
    ids=["recipe", "changelog", "docs", "outside", "changelog and a config", "nothing"],
)
def test_pin_is_stale(files, stale):
    assert sb.pin_is_stale(files, POLICY) is stale
    assert sb.pin_is_stale(files, policy_with("stale_branch:\n  stale_pin: false\n")) is False


# -- the gate against the fake GitHub ---------------------------------------------------------------------

STATUS = marker("sweep-status")


@pytest.fixture
async def h(make_harness, repo):
    return await make_harness(router=registry.router)


def open_pull(github, number: int, files: list, *, keys: tuple[str, ...] = ("dsr1-fp8-mi355x-sglang",)) -> dict:
    pr = github.add_pull(REPO, number=number, user="partner", head_ref=f"recipe-{number}", files=[CHANGELOG, *files])
    github.set_file(REPO, CHANGELOG, HISTORY, ref=pr["base"]["sha"])
    github.set_file(REPO, CHANGELOG, HISTORY + entry(*keys), ref=pr["head"]["sha"])
    return pr


def with_submodule(github, number: int, head_pointer: str, *, readable: bool = True) -> dict:
    """PR `number` moves `utils/srt-slurm` from the base's ON_BASE to `head_pointer`; the submodule's repository
    (readable or not) holds IN_PR, the fixes, then ON_BASE, and a side branch off IN_PR."""
    if readable:
        github.add_repo(SRT_REPO, installation_id=None)
        github.add_history(SRT_REPO, [IN_PR, *BETWEEN, ON_BASE])
        github.add_history(SRT_REPO, ["51de" + "0" * 36, "51de" + "1" * 36], parent=IN_PR)
        github.add_history(SRT_REPO, ["f0" + "a" * 38], parent=ON_BASE)
    pr = open_pull(
        github, number, [{"filename": SRT, "sha": head_pointer, "patch": gitlink_patch(ON_BASE, head_pointer)}]
    )
    base = pr["base"]["sha"]
    github.set_file(
        REPO,
        ".gitmodules",
        f'[submodule "{SRT}"]\n\tpath = {SRT}\n\turl = https://github.com/{SRT_REPO}.git\n',
        ref=base,
    )
    github.set_submodule(REPO, SRT, ON_BASE, ref=base)
    github.set_path_history(REPO, SRT, [(BUMP, None)])
    bumped = github.add_pull(REPO, number=number + 100, title="Bump srt-slurm to v2.59.1", head_ref="bump")
    github.update_pull(REPO, number + 100, state="closed", merged=True, merge_commit_sha=BUMP)
    assert bumped["number"] == number + 100
    return pr


async def label(h, number: int, name: str = "full-sweep-fail-fast"):
    h.github.label_issue(REPO, number, name, actor="maintainer")
    await h.deliver(
        "pull_request", h.github.pull_request_payload(REPO, number, "labeled", sender="maintainer", label=name)
    )


def status(github, number: int) -> str:
    (found,) = [c for c in github.comments(REPO, number) if c["body"].startswith(STATUS + "\n")]
    return found["body"].split("\n## 中文\n")[0]


def gate_check(github, sha: str) -> dict:
    (found,) = [c for c in github.check_runs(REPO, sha) if c["name"] == "sweep-gate"]
    return found


def sweeps(github) -> list[dict]:
    return github.runs(REPO, "run-sweep.yml")


async def test_the_upstream_srt_slurm_rollback_is_refused_naming_path_commits_and_the_pr_that_moved_it(repo, h):
    pr = with_submodule(repo, 60, IN_PR)

    await label(h, 60)

    assert sweeps(repo) == []
    line = line_with(status(repo, 60), "**Stale branch:**")
    assert line.startswith("- ❌ **Stale branch:**")
    for shown in (f"`{SRT}`", "`ae3d687`", "`545233a`", "8 commits older", f"`{SRT_REPO}`", "`b0a1b0a`", "PR #160"):
        assert shown in line, shown
    assert "names no config key" not in line  # no master config changed: the entry's keys are not judged
    assert gate_check(repo, pr["head"]["sha"])["conclusion"] == "failure"


@pytest.mark.parametrize(
    "head_pointer, mark, said, sweeps_started",
    [
        ("f0" + "a" * 38, "✅", "moves forward from `ae3d687` to `f0aaaaa`, 1 commit newer", 1),
        ("51de" + "1" * 36, "❌", "(2 ahead, 8 behind)", 0),
    ],
    ids=["forward", "diverged"],
)
async def test_a_submodule_moved_forward_is_information_and_one_moved_aside_is_refused(
    repo, h, head_pointer, mark, said, sweeps_started
):
    with_submodule(repo, 61, head_pointer)

    await label(h, 61)

    assert len(sweeps(repo)) == sweeps_started
    line = line_with(status(repo, 61), "**Stale branch:**")
    assert line.startswith(f"- {mark} **Stale branch:**") and said in line


@pytest.mark.parametrize(
    "config, mark, sweeps_started",
    [(None, "✅", 1), ("stale_branch:\n  unverified_submodules: refuse\n", "❌", 0)],
    ids=["default: a warning", "the policy refuses"],
)
async def test_an_unreadable_submodule_is_could_not_verify_and_blocks_only_by_policy(
    repo, make_harness, config, mark, sweeps_started
):
    if config:
        repo.set_file(REPO, ".github/sweepbot.yml", config)
    h = await make_harness(router=registry.router)
    with_submodule(repo, 62, IN_PR, readable=False)

    await label(h, 62)

    assert len(sweeps(repo)) == sweeps_started
    body = status(repo, 62)
    line = line_with(body, "**Stale branch:**")  # shown outside the collapsed list, a warning too
    assert line.startswith(f"- {mark} **Stale branch:**") and "could not verify" in line and f"`{SRT_REPO}`" in line
    assert body.index(line) < body.index("<details>")


@pytest.mark.parametrize("readable, again", [(True, 0), (False, 1)], ids=["verified", "unreadable"])
async def test_a_submodule_comparison_is_read_once_per_repository_base_and_head(repo, h, readable, again):
    """A verified comparison is kept (nor are .gitmodules and the gitlink read again); an unreadable one is asked
    again, since the App may be installed on the submodule's repository meanwhile."""
    with_submodule(repo, 64, IN_PR, readable=readable)

    def reads() -> list[str]:
        return [
            r.path
            for r in repo.requests
            if r.path.startswith(f"/repos/{SRT_REPO}/") or "/contents/.gitmodules" in r.path or SRT in r.path
        ]

    await label(h, 64)
    first = reads()
    assert sum(f"/repos/{SRT_REPO}/compare/" in path for path in first) == 1
    repo.reset_requests()
    await label(h, 64, "full-sweep-enabled")  # a second evaluation of the same commits
    assert sum(f"/repos/{SRT_REPO}/compare/" in path for path in reads()) == again
    assert (reads() == []) == readable


async def test_a_recipe_taken_back_to_an_older_base_version_is_refused_with_the_commit_and_pr(repo, h):
    old, new = b"tp: 4\n", b"tp: 8\n"
    replacing = "c0de" * 10
    pr = open_pull(repo, 65, [{"filename": RECIPE, "sha": blob_sha(old)}])
    repo.set_path_history(REPO, RECIPE, [(replacing, new), ("0ld0" * 10, old), ("01de" * 10, b"tp: 2\n")])
    repo.add_pull(REPO, number=165, title="Use TP 8", head_ref="tp8")
    repo.update_pull(REPO, 165, state="closed", merged=True, merge_commit_sha=replacing)

    await label(h, 65)

    assert sweeps(repo) == []
    line = line_with(status(repo, 65), "**Stale branch:**")
    assert line.startswith("- ❌") and f"`{RECIPE}`" in line and "`c0dec0d`" in line and "PR #165" in line
    assert gate_check(repo, pr["head"]["sha"])["conclusion"] == "failure"


MI325X = "dsr1-fp8-mi325x-sglang"  # line 80 of upstream's amd-master.yaml


@pytest.mark.parametrize(
    "keys, sweeps_started, said",
    [
        (("dsr1-fp8-h200-sglang",), 0, f"config key `{MI325X}`"),
        (("dsr1-fp8-mi325x-*",), 1, None),
    ],
    ids=["uncovered", "wildcard"],
)
async def test_a_changed_key_of_upstreams_master_config_must_be_in_the_changelog(
    repo, h, upstream_texts, keys, sweeps_started, said
):
    pr = open_pull(repo, 66, [AMD_MASTER], keys=keys)
    text = upstream_texts["amd-master.yaml"]
    block = f"{MI325X}:\n  image: lmsysorg/sglang:v0.5.12-rocm700-mi30x\n"
    assert text.splitlines().index(f"{MI325X}:") == 79 and block in text
    repo.set_file(REPO, AMD_MASTER, text, ref=pr["base"]["sha"])
    repo.set_file(REPO, AMD_MASTER, text.replace(block, block.replace("v0.5.12", "v0.5.13")), ref=pr["head"]["sha"])

    await label(h, 66)

    assert len(sweeps(repo)) == sweeps_started
    body = status(repo, 66)
    check = gate_check(repo, pr["head"]["sha"])
    notes = [(n["path"], n["start_line"], n["annotation_level"]) for n in repo.check_annotations(REPO, check["id"])]
    if said:
        line = line_with(body, "**Stale branch:**")
        assert line.startswith("- ❌") and said in line and "no new changelog entry lists it" in line
        # on the check run, on the key's line, and the entry naming another key on its own line (information)
        assert (AMD_MASTER, 80, "failure") in notes and (CHANGELOG, 7, "notice") in notes
    else:
        assert "❌" not in body and notes == []


async def test_a_push_changing_a_recipe_after_the_pin_makes_it_stale_and_the_changelog_alone_does_not(repo, h):
    pr = open_pull(repo, 67, [RECIPE])
    await label(h, 67)
    (run,) = sweeps(repo)
    pinned_head = pr["head"]["sha"]
    found = [c for c in repo.comments(REPO, 67) if c["body"].startswith(STATUS + "\n")][0]
    record = SweepRecord.parse(found["body"]).pinned(Pin(run["id"], 1, "maintainer", "2099-01-01T00:00:00Z"))
    head, _, rest = found["body"].partition("\n")
    rest = "\n".join(line for line in rest.split("\n") if not line.startswith("<!-- sweepbot-record "))
    found["body"] = f"{head}\n{record.line()}\n{rest}"

    repo.set_file(REPO, RECIPE, "tp: 4\n", ref=pinned_head)
    for sha, recipe, mark in (("7" * 40, "tp: 4\n", "✅"), ("8" * 40, "tp: 8\n", "❌")):
        repo.push_commit(REPO, 67, sha=sha, message="More")
        more = entry("dsr1-fp8-mi355x-sglang") + entry("dsr1-fp8-mi355x-sglang").replace(b"MI355X", b"More")
        repo.set_file(REPO, CHANGELOG, HISTORY + more, ref=sha)  # the changelog changes on both pushes
        repo.set_file(REPO, RECIPE, recipe, ref=sha)
        await h.deliver("pull_request", repo.pull_request_payload(REPO, 67, "synchronize", sender="partner"))
        line = line_with(status(repo, 67), "**Reuse pin:**")
        assert line.startswith(f"- {mark} **Reuse pin:**"), line
    assert f"`{RECIPE}`" in line and "the pin is stale" in line
    assert len(sweeps(repo)) == 1  # a stale pin still starts no sweep by itself


@pytest.mark.parametrize(
    "text, lines",
    [
        ("a-1:\n  x: 1\nb:\n  y: 2\n", {"a-1": 1, "b": 3}),
        ("# a comment\n'quoted': 1\na-1 : 2\n  nested: 3\nlast:", {"last": 5}),
        (None, {}),
    ],
    ids=["keys", "only plain keys at the start of a line", "no file"],
)
def test_the_line_of_each_config_key(text, lines):
    assert sb.key_lines(text) == lines


def test_every_config_key_of_upstreams_master_configs_has_its_line(upstream_texts):
    for text in upstream_texts.values():
        assert set(sb.key_lines(text)) == set(read_master_configs({"f": text}).blocks)

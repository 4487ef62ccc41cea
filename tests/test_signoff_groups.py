"""Who must sign through the webhook into the fake GitHub: every owner group of the changed, owned files
needs a sign-off of the head from one of its owners, as GitHub's code-owner rule asks (CODEOWNERS from the base
branch, last matching line wins), unless the policy names owners that suffice; the PR's author does not sign
their own PR unless the policy lets them. Each verdict says which groups are covered and which still need one."""

from __future__ import annotations

from harness import REPO
from test_reuse_command import command, fake_clock, finished_run  # noqa: F401
from test_signoff import (  # noqa: F401  the fixtures this module's tests take
    AMD_FILE,
    check_line,
    owned,
    ready,
    real,
    sign,
    signoff_body,
    signoff_check,  # noqa: F401
    verdict,
    verdicts,
)
from test_sweep_gate import CHANGELOG, make_harness, no_merge_wait, open_pull, repo  # noqa: F401

NVIDIA_FILE = "configs/nvidia-master.yaml"


def real_body(real: str, signer: str) -> str:
    """The real template, ticked, signed by `signer` (the `real` fixture signs it as billishyahao)."""
    return real.replace("@billishyahao", f"@{signer}")


async def test_one_vendor_alone_does_not_sign_for_another_vendors_recipe_and_the_changelog(real, make_harness):
    """Pins the bug "one vendor signs for another": the AMD owner alone signed a PR that also rewrites the
    recipe the NVIDIA owners own and the changelog the core team owns (the real CODEOWNERS), and `signoff` was
    success. Every owner group needs its own sign-off: the verdicts say which are covered, and the check passes
    once the last group is."""
    h = await make_harness()
    h.github.add_team("InferenceX", "core", ["core-member"])
    await ready(h, 100, files=(CHANGELOG, AMD_FILE, NVIDIA_FILE))
    head = h.github.pull(REPO, 100)["head"]["sha"]
    amd = await sign(h, 100, "billishyahao", real)
    found = verdict(h.github, 100, amd)
    assert found["record"]["outcome"] == "wait", found["body"]  # the other owners' turn, not a FAIL
    line = check_line(found["body"], "Owner groups")
    assert line.startswith("- ⏳") and "2 of the 3 owner groups of the changed files still need a sign-off" in line
    assert (
        "  - ⏳ `@InferenceX/core` (line 1: `inferencex-e2e/perf-changelog.yaml`): still needs a sign-off"
        in found["body"]
    ), found["body"]
    assert (
        "  - ✅ `@billishyahao`, `@chunfangamd`, `@seungrokj`, `@yctseng0211` and `@1am9trash` (line 4:"
        " `configs/amd-master.yaml`): signed off by `billishyahao`"
    ) in found["body"]
    assert check_line(found["body"], "CODEOWNER").startswith("- ✅")  # the signer may sign: only the groups wait
    assert signoff_check(h.github, head)["status"] == "in_progress"

    nvidia = await sign(h, 100, "ankur-singh", real_body(real, "ankur-singh"))
    assert verdict(h.github, 100, nvidia)["record"]["outcome"] == "wait"
    assert signoff_check(h.github, head)["status"] == "in_progress", "the changelog's owners have not signed"

    core = await sign(h, 100, "core-member", real_body(real, "core-member"))
    found = verdicts(h.github, 100)
    assert {key: v["record"]["outcome"] for key, v in found.items()} == {
        f"comment-{amd['id']}": "pass",
        f"comment-{nvidia['id']}": "pass",
        f"comment-{core['id']}": "pass",
    }
    assert "signed off by `ankur-singh` and `core-member`" in found[f"comment-{core['id']}"]["body"]
    assert check_line(found[f"comment-{amd['id']}"]["body"], "Owner groups").startswith(
        "- ✅ **Owner groups:** Every owner group of the changed files has a sign-off"
    )
    assert signoff_check(h.github, head)["conclusion"] == "success"


async def test_a_withdrawn_signoff_uncovers_its_group_again(owned, make_harness):
    """The groups are counted from the current sign-offs: deleting the NVIDIA owner's sign-off fails the AMD
    owner's verdict again (edited in place) and the check."""
    h = await make_harness()
    await ready(h, 101, files=(CHANGELOG, AMD_FILE, NVIDIA_FILE))
    head = owned.pull(REPO, 101)["head"]["sha"]
    amd = await sign(h, 101, "amd-owner")
    nvidia = await sign(h, 101, "nv-member")
    assert verdict(owned, 101, amd)["record"]["outcome"] == "pass"
    assert signoff_check(owned, head)["conclusion"] == "success"
    await h.deliver("issue_comment", owned.issue_comment_payload(REPO, 101, nvidia, "deleted"))
    found = verdict(owned, 101, amd)
    assert found["record"]["outcome"] == "wait", found["body"]
    assert "  - ⏳ `@acme/nvidia` (line 5: `configs/nvidia-master.yaml`): still needs a sign-off" in found["body"]
    assert signoff_check(owned, head)["status"] == "in_progress"


async def test_an_owner_the_policy_names_as_sufficient_covers_every_group(real, make_harness):
    """`signoff.sufficient_owners`: the policy may name owners whose sign-off suffices. A core member's sign-off
    then covers the AMD recipe too; a co-owner of a line that also names the core team (NVIDIA's) does not."""
    h = await make_harness()
    h.github.set_file(REPO, ".github/sweepbot.yml", 'signoff:\n  sufficient_owners: ["@InferenceX/core"]\n', ref="main")
    h.github.add_team("InferenceX", "core", ["core-member"])
    await ready(h, 102, files=(CHANGELOG, AMD_FILE, NVIDIA_FILE))
    nvidia = await sign(h, 102, "ankur-singh", real_body(real, "ankur-singh"))
    assert verdict(h.github, 102, nvidia)["record"]["outcome"] == "wait"
    core = await sign(h, 102, "core-member", real_body(real, "core-member"))
    found = verdict(h.github, 102, core)
    assert found["record"]["outcome"] == "pass", found["body"]
    assert (
        "; by the policy (`signoff.sufficient_owners`), a sign-off by `@InferenceX/core` covers every owner group."
    ) in check_line(found["body"], "CODEOWNER")
    assert signoff_check(h.github, h.github.pull(REPO, 102)["head"]["sha"])["conclusion"] == "success"


async def test_the_authors_own_signoff_does_not_count(owned, make_harness):
    """Pins the bug "self sign-off": a vendor CODEOWNER who opened the PR signed it, and `signoff` was
    success. The author's sign-off fails and covers no group, unless the policy lets an author sign."""
    h = await make_harness()
    await ready(h, 103, files=(CHANGELOG, AMD_FILE))
    owned.pull(REPO, 103)["user"] = {"login": "amd-owner", "id": 4242, "type": "User"}
    head = owned.pull(REPO, 103)["head"]["sha"]
    own = await sign(h, 103, "AMD-Owner")  # logins compare without case
    found = verdict(owned, 103, own)
    assert found["record"]["outcome"] == "fail", found["body"]
    assert check_line(found["body"], "CODEOWNER").startswith(
        "- ❌ **CODEOWNER:** `AMD-Owner` opened this PR, and an author's own sign-off does not count"
    )
    assert check_line(found["body"], "Owner groups").startswith("- ⏳"), "it covers no group"
    assert signoff_check(owned, head)["conclusion"] == "failure"


async def test_the_policy_may_let_an_author_sign(owned, make_harness):
    h = await make_harness()
    owned.set_file(REPO, ".github/sweepbot.yml", "signoff:\n  author_may_sign: true\n", ref="main")
    await ready(h, 104, files=(CHANGELOG, AMD_FILE))
    owned.pull(REPO, 104)["user"] = {"login": "amd-owner", "id": 4242, "type": "User"}
    found = verdict(owned, 104, await sign(h, 104, "amd-owner"))
    assert found["record"]["outcome"] == "pass", found["body"]
    assert signoff_check(owned, owned.pull(REPO, 104)["head"]["sha"])["conclusion"] == "success"

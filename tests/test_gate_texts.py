"""The gate's lines in the sweep status comment and the `sweep-gate` check run: templates/_gate_reason.{en,zh}.j2.

The conditions come from real `bot.rules.gate.decide` calls (only the handler's dispatch `failed` and `retrying` are
built by hand, with the params the handler gives), so a code or a param that gate.py adds or renames without a
text here fails these tests.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace

import jinja2
import pytest
from gidgethub import sansio
from test_templates import CJK, URL, code_spans

from bot.core.config import default_policy, parse_repo_config, policy_defaults
from bot.core.processing import Context
from bot.core.templates import Templates, code_span
from bot.rules import stale_branch
from bot.rules.commands import find_commands
from bot.rules.gate import (
    CONDITIONS,
    REASONS,
    WAIT,
    AppliedLabel,
    Changelog,
    ChangelogOutcome,
    Condition,
    Dispatched,
    GateInput,
    decide,
    dispatch_id,
    mark,
)
from bot.rules.policy import Policy
from handlers import sweep_gate

ENV = Templates().environment
LANGUAGES = ("en", "zh")
REASON = {
    lang: ENV.from_string(f'{{% import "_gate_reason.{lang}.j2" as t %}}{{{{ t.reason(c, g) }}}}') for lang in LANGUAGES
}
TITLE = {
    lang: ENV.from_string(f'{{% import "_gate_reason.{lang}.j2" as t %}}{{{{ t.title(name) }}}}') for lang in LANGUAGES
}

POLICY = default_policy()
FAIL_FAST, ENABLED, NON_CANARY = (p.name for p in POLICY.labels.primary)
MODIFIERS = POLICY.labels.modifiers.names()
ALL_EVALS, EVALS_ONLY, AGENTX_FAST = MODIFIERS["all_evals"], MODIFIERS["evals_only"], MODIFIERS["agentx_fast"]

HEAD = "1a2b3c4d5e6f" + "1" * 28
OLD_HEAD = "0f9e8d7c6b5a" + "0" * 28
BASE = "b" * 40
MERGE = "c0ffee12" + "c" * 32
PIN = 9001
RUN = 7

VALID = ChangelogOutcome(Changelog.VALID)
REPO_URL = "https://github.com/acme/InferenceX"
RUNS_URL = f"{REPO_URL}/actions"  # the runs page the handler links


def writer(name, sha=HEAD, by="maintainer"):
    return AppliedLabel(name, applied_by=by, writer=True, head_sha=sha)


def non_writer(name, sha=HEAD, by="triager"):
    return AppliedLabel(name, applied_by=by, writer=False, head_sha=sha)


def make_pr(**changes) -> GateInput:
    """An open same-repo PR #42 into main with a valid changelog append and the recommended primary by a writer."""
    pr = GateInput(
        number=42,
        head_sha=HEAD,
        base_sha=BASE,
        head_ref="recipe/mi355x",
        base_ref="main",
        default_branch="main",
        changelog=VALID,
        labels=(writer(FAIL_FAST),),
        head_commit_message="Tune MI355X recipe",
    )
    return replace(pr, **changes)


def fork_pr(**changes) -> GateInput:
    return make_pr(
        **{"is_fork": True, "head_ref": "patch-1", "merge_commit_sha": MERGE, "merge_parents": (BASE, HEAD), **changes}
    )


def facts(policy=POLICY) -> dict:
    """The repository facts `g` the handler gives the templates, built by the handler's own function from
    `policy`, for PR #42's head in acme/InferenceX (a copy here would pass while the handler gave other facts)."""
    event = sansio.Event(
        {"repository": {"full_name": "acme/InferenceX", "html_url": REPO_URL}},
        event="pull_request",
        delivery_id="gate-texts",
    )
    # the facts come from the policy and the PR: no GitHub, no repository config (None: reading either fails)
    ctx = Context(
        event=event,
        repo="acme/InferenceX",
        policy=policy,
        bot_login="sweepbot[bot]",
        templates=Templates(),
        gh=None,  # type: ignore[arg-type]  # deliberately no GitHub client
        configs=None,  # type: ignore[arg-type]  # deliberately no RepoConfigs
    )
    return sweep_gate._facts(ctx, {"number": 42, "head": {"sha": HEAD}})


def test_the_facts_are_the_handlers():
    g = facts()
    assert g == {
        "primary_labels": [FAIL_FAST, ENABLED, NON_CANARY],
        "recommended": FAIL_FAST,
        "modifiers": MODIFIERS,
        "changelog_path": POLICY.paths.changelog,
        "changelog_url": f"{REPO_URL}/blob/{HEAD}/{POLICY.paths.changelog}",
        "skip_marker": POLICY.skip_sweep_marker,
        "use_command": "/" + POLICY.commands.use,
        "runs_url": RUNS_URL,
    }


def as_mapping(c: Condition, lists: bool = False) -> dict:
    """A Condition as the templates get it; `lists` sends the params through JSON, so tuples arrive as lists."""
    params = dict(c.params)
    if lists:
        params = json.loads(json.dumps(params))
    return {"name": c.name, "ok": c.ok, "code": c.reason_code, "params": params}


def render(c: Condition | dict, lang: str, g: dict | None = None) -> str:
    mapping = c if isinstance(c, dict) else as_mapping(c)
    return REASON[lang].render(c=mapping, g=facts() if g is None else g)


def key_of(pr: GateInput) -> str:
    return decide(pr, POLICY).dispatch_id


# The stale-branch guard's findings, from its own rules (bot.rules.stale_branch).
SUB_BASE, SUB_HEAD = "ae3d6877" + "a" * 32, "545233a0" + "5" * 32
ROLLBACK = stale_branch.submodule_finding(
    "utils/srt-slurm",
    SUB_BASE,
    SUB_HEAD,
    "acme/srt-slurm",
    stale_branch.Compared("behind", 0, 8),
    POLICY,
    stale_branch.LastMove("d00d" + "d" * 36, 1380),
)
UNVERIFIED = stale_branch.submodule_finding("utils/aiperf", SUB_BASE, SUB_HEAD, "acme/aiperf", None, POLICY)
FORWARD = stale_branch.submodule_finding(
    "utils/srt-slurm", SUB_HEAD, SUB_BASE, "acme/srt-slurm", stale_branch.Compared("ahead", 8, 0), POLICY
)
REVERTED = stale_branch.reverted_finding("inferencex-e2e/launchers/run.sh", "f00d" + "f" * 36, POLICY, 1402)
REVERTED_WARN = stale_branch.reverted_finding("inferencex-e2e/benchmarks/bench.py", "f00d" + "f" * 36, POLICY)
UNCOVERED = stale_branch.Finding(
    stale_branch.UNCOVERED_KEY, stale_branch.REFUSE, "amd-master.yaml", {"key": "dsr1-fp4-mi355x-sglang"}
)
UNCHANGED = stale_branch.Finding(
    stale_branch.UNCHANGED_KEY, stale_branch.INFO, POLICY.paths.changelog, {"key": "gptoss-*", "line": 12}
)

# Real decisions: between them every (name, code) that decide() gives.
CASES = {
    "same-repo, starting": make_pr(),
    "changelog absent": make_pr(changelog=ChangelogOutcome(Changelog.ABSENT)),
    "changelog invalid": make_pr(changelog=ChangelogOutcome(Changelog.INVALID)),
    "append-only with evals-only and all-evals": make_pr(
        changelog=ChangelogOutcome(Changelog.VALID, append_only=True),
        labels=(writer(FAIL_FAST), writer(EVALS_ONLY), writer(ALL_EVALS)),
    ),
    "append-only, agentx-fast": make_pr(
        changelog=ChangelogOutcome(Changelog.VALID, append_only=True), labels=(writer(NON_CANARY), writer(AGENTX_FAST))
    ),
    "no labels": make_pr(labels=()),
    "two primaries": make_pr(labels=(writer(NON_CANARY), writer(ENABLED))),
    "modifier alone": make_pr(labels=(writer(EVALS_ONLY),)),
    "two modifiers alone": make_pr(labels=(writer(AGENTX_FAST), writer(ALL_EVALS))),
    "closed": make_pr(open=False),
    "merged": make_pr(open=False, merged=True, pin=PIN),
    "merged, nothing pinned": make_pr(open=False, merged=True),
    "links corrected": make_pr(changelog=ChangelogOutcome(Changelog.LINKS_CORRECTED)),
    "draft": make_pr(draft=True),
    "wrong base": make_pr(base_ref="release/v2"),
    "fork, approved": fork_pr(),
    "fork, approved, untrusted modifier": fork_pr(labels=(writer(FAIL_FAST), non_writer(EVALS_ONLY))),
    "fork, pushed after approval": fork_pr(labels=(writer(FAIL_FAST, sha=OLD_HEAD),)),
    "fork, approval unknown": fork_pr(labels=(writer(FAIL_FAST, sha=None),)),
    "fork, primary by a non-writer": fork_pr(labels=(non_writer(FAIL_FAST), non_writer(ALL_EVALS, by="drive-by"))),
    "fork, modifier by a non-writer": fork_pr(labels=(non_writer(AGENTX_FAST),)),
    "fork, no label": fork_pr(labels=()),
    "fork, no merge commit": fork_pr(merge_commit_sha=None),
    "fork, merge commit of an earlier head": fork_pr(merge_parents=(BASE, OLD_HEAD)),
    "fork, labeller's permission unknown": fork_pr(labels=(AppliedLabel(FAIL_FAST, "maintainer", None, HEAD),)),
    "skip marker": make_pr(head_commit_message="Tune MI355X recipe\n\n[skip-sweep] numbers unchanged"),
    "pinned": make_pr(pin=PIN),
    "pinned, primary re-added": make_pr(pin=PIN, primary_readded_after_pin=True),
    "pinned, blocked": make_pr(pin=PIN, pin_blocked_by=("evals-only", "agentx-fast")),
    "dispatched": make_pr(dispatched=(Dispatched(key_of(make_pr()), RUN, "in_progress"),)),
    "run passed": make_pr(dispatched=(Dispatched(key_of(make_pr()), RUN, "completed", "success"),)),
    "run failed": make_pr(dispatched=(Dispatched(key_of(make_pr()), RUN, "completed", "failure"),)),
    "run cancelled": make_pr(dispatched=(Dispatched(key_of(make_pr()), RUN, "completed", "cancelled"),)),
    "fork, conflicts": fork_pr(mergeable=False),
    "pinned, stale": make_pr(pin=PIN, pin_stale_files=("inferencex-e2e/recipes/mi355x.sh",)),
    "stale branch: submodule rolled back, key uncovered": make_pr(stale_branch=(ROLLBACK, UNCOVERED, REVERTED)),
    "stale branch: a reverted file, a moved submodule unverified": make_pr(stale_branch=(REVERTED_WARN, UNVERIFIED)),
    "stale branch: moved forward, an entry names an unchanged key": make_pr(stale_branch=(FORWARD, UNCHANGED)),
}
DECISIONS = {name: decide(pr, POLICY) for name, pr in CASES.items()}
# The sweep's size against a limit (`sweeps.confirm_over`), under a policy that sets one.
LIMITED = parse_repo_config("sweeps:\n  confirm_over: 100\n")
COST_CASES = {
    "cost unknown": make_pr(points=None),
    "cost within": make_pr(points=100),
    "cost over, no label": make_pr(points=101, labels=()),
    "cost awaiting": make_pr(points=101),
    "cost confirmed": make_pr(points=101, confirmed=key_of(make_pr())),
}
DECISIONS.update({name: decide(pr, LIMITED) for name, pr in COST_CASES.items()})

# Set by the handler when GitHub refuses or keeps failing the dispatch.
ID = dispatch_id(42, HEAD, [FAIL_FAST])
FAILED = Condition(
    "dispatch",
    False,
    "failed",
    {"dispatch_id": ID, "error": "422 Unprocessable Entity: Workflow does not have 'workflow_dispatch' trigger"},
)
# `retry_in` is what the template needs; the handler gives none today (the strict xfail test in
# test_sweep_gate.py pins that bug), so this line is the text as it should render.
RETRYING = Condition("dispatch", None, "retrying", {"dispatch_id": ID, "error": "502 Bad Gateway", "retry_in": 30})

# Set by the handler when GitHub's answer to the dispatch was lost and no run shows it (Unreconciled).
UNKNOWN = Condition(
    "dispatch", False, "unknown", {"dispatch_id": ID, "error": "502 Bad Gateway; GitHub does not show it"}
)

# Set by the handler when a runner pool the sweep runs on is full (handlers/sweep_gate.py take_turn).
QUEUED = Condition(
    "dispatch",
    False,
    "queued",
    {"dispatch_id": ID, "pool": "mi355x", "position": 3, "ahead": [12, 15], "running": [9], "limit": 1},
)

CONDITIONS_SEEN = [c for decision in DECISIONS.values() for c in decision.conditions] + [
    FAILED,
    RETRYING,
    UNKNOWN,
    QUEUED,
]
ALL_PAIRS = {(name, code) for name, codes in REASONS.items() for code in codes}


def condition(case: str, name: str) -> Condition:
    return DECISIONS[case].condition(name)


def pair(c: Condition) -> str:
    return f"{c.name}/{c.reason_code}"


def one_per_pair() -> list[Condition]:
    found: dict[tuple[str, str], Condition] = {}
    for c in CONDITIONS_SEEN:
        found.setdefault((c.name, c.reason_code), c)
    return list(found.values())


# -- coverage --------------------------------------------------------------------------------------


def test_the_decisions_cover_every_reason_code():
    seen = {(c.name, c.reason_code) for c in CONDITIONS_SEEN}
    assert seen == ALL_PAIRS, f"missing {sorted(ALL_PAIRS - seen)}, undeclared {sorted(seen - ALL_PAIRS)}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_reason_code_has_a_line(lang):
    rendered = set()
    for c in CONDITIONS_SEEN:
        for lists in (False, True):
            assert render(as_mapping(c, lists), lang), pair(c)
        rendered.add((c.name, c.reason_code))
    assert rendered == ALL_PAIRS


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_code_of_a_condition_has_its_own_sentence(lang):
    by_name: dict[str, set[str]] = {}
    for c in one_per_pair():
        by_name.setdefault(c.name, set()).add(render(c, lang))
    assert {name: len(lines) for name, lines in by_name.items()} == {
        name: len(codes) for name, codes in REASONS.items()
    }


# -- shape ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lists", [False, True], ids=["tuples", "lists"])
@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_line_is_one_line_and_no_command(lang, lists):
    names = set(POLICY.commands.names().values())
    for c in CONDITIONS_SEEN:
        line = render(as_mapping(c, lists), lang)
        assert line.strip(), pair(c)
        assert line == line.strip(), f"{pair(c)}: leading or trailing whitespace: {line!r}"
        assert "\n" not in line and "\r" not in line, f"{pair(c)}: {line!r}"
        assert not line.startswith("/"), f"{pair(c)}: {line!r}"
        assert find_commands(f"- ✅ **Title**: {line}\n{line}", names) == [], f"{pair(c)}: {line!r}"
        assert "{{" not in line and "{%" not in line and "None" not in line, f"{pair(c)}: {line!r}"


def test_english_has_no_cjk_and_chinese_is_chinese():
    for c in CONDITIONS_SEEN:
        english, chinese = render(c, "en"), render(c, "zh")
        assert not CJK.search(english), f"{pair(c)}: {english!r}"
        assert len(CJK.findall(chinese)) >= 4, f"{pair(c)}: {chinese!r}"
        assert english != chinese


def test_both_languages_carry_the_same_code_spans_and_links():
    for c in CONDITIONS_SEEN:
        english, chinese = render(c, "en"), render(c, "zh")
        assert sorted(set(code_spans(english))) == sorted(set(code_spans(chinese))), pair(c)
        # Not only the same set: each value as often in both (a label named twice in one is named twice in both).
        assert Counter(code_spans(english)) == Counter(code_spans(chinese)), pair(c)
        assert sorted(set(URL.findall(english))) == sorted(set(URL.findall(chinese))), pair(c)
        assert english.count("](") == chinese.count("]("), pair(c)


# -- the facts each sentence gives ------------------------------------------------------------------


def both(c: Condition, g: dict | None = None) -> list[tuple[str, list[str]]]:
    """(line, its code spans) in English and in Chinese."""
    return [(line, code_spans(line)) for line in (render(c, lang, g) for lang in LANGUAGES)]


def test_changelog_lines_link_the_file():
    g = facts()
    for case in ("same-repo, starting", "changelog absent", "changelog invalid"):
        for line, _spans in both(condition(case, "changelog")):
            assert f"[`{g['changelog_path']}`]({g['changelog_url']})" in line
    english = render(condition("changelog absent", "changelog"), "en")
    assert "Append at least one entry at the end of the file" in english
    english = render(condition("append-only with evals-only and all-evals", "changelog"), "en")
    assert "`append-only: true`" in english


def test_valid_labels_say_what_the_sweep_does():
    english = render(condition("same-repo, starting", "labels"), "en")
    assert english == f"`{FAIL_FAST}`: runs a canary first; each matrix stops at its first failure."
    english = render(condition("append-only, agentx-fast", "labels"), "en")
    assert english == f"`{NON_CANARY}` with `{AGENTX_FAST}`: no canary run; every matrix runs to the end."
    assert "不运行 canary" in render(condition("append-only, agentx-fast", "labels"), "zh")


def test_no_primary_lists_the_primaries_and_the_recommended_one():
    for _line, spans in both(condition("no labels", "labels")):
        assert [FAIL_FAST, ENABLED, NON_CANARY] == spans[:3]
        assert spans.count(FAIL_FAST) == 2  # listed, then recommended
    assert "(`full-sweep-fail-fast` is recommended)" in render(condition("no labels", "labels"), "en")


def test_several_primaries_names_them_and_says_keep_one_recommending_one():
    c = condition("two primaries", "labels")
    assert c.params["labels"] == (ENABLED, NON_CANARY)
    for line, spans in both(c):
        assert spans == [ENABLED, NON_CANARY, FAIL_FAST]
        assert "2" in line
    english = render(c, "en")
    assert "Keep exactly one and remove the others; `full-sweep-fail-fast` is the recommended one." in english
    assert "请只保留一个" in render(c, "zh")


def test_several_primaries_without_a_recommended_label():
    c = condition("two primaries", "labels")
    c = replace(c, params={**c.params, "recommended": None})
    g = {**facts(), "recommended": None}
    for _line, spans in both(c, g):
        assert spans == [ENABLED, NON_CANARY]
    assert render(c, "en", g).endswith("Keep exactly one and remove the others.")


def test_modifier_without_primary_names_the_modifiers_and_asks_for_one_primary():
    english = render(condition("modifier alone", "labels"), "en")
    assert english.startswith(f"The modifier `{EVALS_ONLY}` does nothing without a primary label.")
    assert "Add one primary label:" in english
    english = render(condition("two modifiers alone", "labels"), "en")
    assert english.startswith(f"The modifiers `{ALL_EVALS}` and `{AGENTX_FAST}` do nothing")
    for _line, spans in both(condition("two modifiers alone", "labels")):
        assert spans[:2] == [ALL_EVALS, AGENTX_FAST]
        assert {FAIL_FAST, ENABLED, NON_CANARY} <= set(spans)


def test_append_only_conflict_names_the_modifiers():
    c = condition("append-only with evals-only and all-evals", "labels")
    assert c.reason_code == "append_only_conflict"
    for _line, spans in both(c):
        assert {ALL_EVALS, EVALS_ONLY, "append-only: true"} <= set(spans)
        assert AGENTX_FAST not in spans


def test_pull_request_lines():
    assert "marked ready for review" in render(condition("draft", "pull_request"), "en")
    assert "Reopen it" in render(condition("closed", "pull_request"), "en")
    assert f"run `{PIN}` is the pinned run" in render(condition("merged", "pull_request"), "en")
    assert "no run is pinned" in render(condition("merged, nothing pinned", "pull_request"), "en")
    assert f"`{PIN}`" in render(condition("merged", "pull_request"), "zh")
    for _line, spans in both(condition("wrong base", "pull_request")):
        assert set(spans) == {"release/v2", "main"}
    assert "Change the base branch to `main`." in render(condition("wrong base", "pull_request"), "en")


def test_fork_approval_shows_who_and_the_short_sha():
    for line, spans in both(condition("fork, approved", "fork_approval")):
        assert spans == ["maintainer", HEAD[:7]]
        assert HEAD[:8] not in line


def test_untrusted_modifier_on_an_approved_fork_is_said_not_to_count():
    for line, spans in both(condition("fork, approved, untrusted modifier", "fork_approval")):
        assert EVALS_ONLY in spans and "write" in line


def test_head_changed_shows_both_short_shas_and_the_re_add():
    c = condition("fork, pushed after approval", "fork_approval")
    assert c.reason_code == "head_changed"
    for line, spans in both(c):
        assert spans == ["maintainer", OLD_HEAD[:7], HEAD[:7], HEAD[:7]]
        assert OLD_HEAD not in line and HEAD not in line
    english = render(c, "en")
    assert "a new commit was pushed after that approval" in english
    assert f"A maintainer must remove the primary label and add it again to approve `{HEAD[:7]}`." in english


def test_approval_unknown_asks_for_a_re_add():
    english = render(condition("fork, approval unknown", "fork_approval"), "en")
    assert f"remove the primary label and add it again to approve `{HEAD[:7]}`" in english


def test_untrusted_labeller_names_labels_logins_removed_and_who_can_approve():
    c = condition("fork, primary by a non-writer", "fork_approval")
    assert c.params["removed"] == (FAIL_FAST,)
    for line, spans in both(c):
        assert {FAIL_FAST, ALL_EVALS, "triager", "drive-by"} <= set(spans)
        assert spans.count(FAIL_FAST) == 2  # not counted, then removed
        assert "write" in line and "maintain" in line and "admin" in line
    english = render(c, "en")
    assert f"the bot removed `{FAIL_FAST}`" in english
    assert "with write, maintain or admin permission on the repository" in english
    assert "已移除" in render(c, "zh")

    c = condition("fork, modifier by a non-writer", "fork_approval")
    assert c.reason_code == "untrusted_labeller" and c.params["removed"] == ()
    assert "removed" not in render(c, "en") and "已移除" not in render(c, "zh")


def test_merge_commit_lines():
    for _line, spans in both(condition("fork, approved", "merge_commit")):
        assert spans == [MERGE[:7]]
    english = render(condition("fork, no merge commit", "merge_commit"), "en")
    assert english.startswith("Waiting for GitHub") and f"`{HEAD[:7]}`" in english
    english = render(condition("fork, conflicts", "merge_commit"), "en")
    assert "conflicts with the base branch" in english and "resolves the conflicts" in english


def test_skip_marker_present_says_checks_still_run():
    english = render(condition("skip marker", "skip_marker"), "en")
    assert "`[skip-sweep]`" in english and "checks still run" in english and f"`{HEAD[:7]}`" in english
    assert "其他检查仍会运行" in render(condition("skip marker", "skip_marker"), "zh")


def test_reuse_pin_lines():
    english = render(condition("pinned", "reuse_pin"), "en")
    assert english == (
        f"Run `{PIN}` is pinned, so pushes start no sweep; removing the primary label and adding "
        "it again sweeps anyway."
    )
    closed = render(condition("pinned", "reuse_pin"), "en", {**facts(), "is_open": False})
    assert closed == f"Run `{PIN}` is pinned, so pushes start no sweep.", "no advice once the PR is closed"
    assert f"`{PIN}`" in render(condition("pinned", "reuse_pin"), "zh")
    assert f"`{PIN}`" in render(condition("pinned, primary re-added", "reuse_pin"), "en")
    for line, spans in both(condition("same-repo, starting", "reuse_pin")):
        assert spans == ["/use <run_id>"]
        assert not line.startswith("/")


def test_dispatch_lines_show_the_run_and_link_the_runs():
    for line, spans in both(condition("dispatched", "dispatch")):
        assert spans[:2] == [str(RUN), "in_progress"]
        assert f"]({RUNS_URL})" in line
    for _line, spans in both(condition("same-repo, starting", "dispatch")):
        assert spans == [DECISIONS["same-repo, starting"].dispatch_id]


def test_queued_names_its_place_the_prs_ahead_and_those_running():
    assert render(QUEUED, "en").startswith("Queued: position 3 on `mi355x`, behind #12, #15. At most 1 sweep runs")
    assert "(now #9)" in render(QUEUED, "en")
    chinese = render(QUEUED, "zh")
    assert "runner 池 `mi355x` 上排第 3 位，排在 #12，#15 之后" in chinese and "（当前：#9）" in chinese
    assert mark(QUEUED) == WAIT


def test_failed_and_retrying_show_the_error_as_a_code_span():
    for c in (FAILED, RETRYING):
        for _line, spans in both(c):
            assert c.params["error"] in spans and ID in spans
    assert "30 seconds" in render(RETRYING, "en") and "30 秒" in render(RETRYING, "zh")
    one = replace(RETRYING, params={**RETRYING.params, "retry_in": 1})
    assert "in 1 second " in render(one, "en")


# -- unsafe values ----------------------------------------------------------------------------------


def test_a_label_with_backticks_is_one_safe_code_span():
    data = policy_defaults()
    odd = "sweep`odd``tick"
    data["labels"]["primary"][1]["name"] = odd
    policy = Policy.model_validate(data)
    pr = make_pr(labels=(writer(FAIL_FAST), writer(odd)))
    c = decide(pr, policy).condition("labels")
    assert c.reason_code == "several_primaries"
    g = facts(policy)
    for line, spans in both(c, g):
        assert code_span(odd) in line
        assert odd in spans and FAIL_FAST in spans
    c = decide(make_pr(labels=()), policy).condition("labels")
    for _line, spans in both(c, g):
        assert odd in spans


def test_user_values_with_line_breaks_stay_on_one_line():
    pr = make_pr(base_ref="evil\n/use 1234\n`x`")
    c = decide(pr, POLICY).condition("pull_request")
    error = replace(FAILED, params={**FAILED.params, "error": "boom\n/use 99\r\n/help"})
    for cond in (c, error):
        for line, _ in both(cond):
            assert "\n" not in line and "\r" not in line
            assert find_commands(line, {"use", "help"}) == []


# -- failures and titles ----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_unknown_code_raises(lang):
    c = {"name": "labels", "ok": False, "code": "no_such_code", "params": {}}
    with pytest.raises(jinja2.UndefinedError, match="no text for labels/no_such_code"):
        render(c, lang)
    c = {"name": "no_such_condition", "ok": None, "code": "valid", "params": {}}
    with pytest.raises(jinja2.UndefinedError, match="no text for no_such_condition/valid"):
        render(c, lang)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_missing_param_or_fact_raises(lang):
    c = as_mapping(condition("two primaries", "labels"))
    del c["params"]["recommended"]
    with pytest.raises(jinja2.UndefinedError):
        render(c, lang)
    g = {key: value for key, value in facts().items() if key != "runs_url"}
    with pytest.raises(jinja2.UndefinedError):
        render(condition("dispatched", "dispatch"), lang, g)


def test_every_condition_has_a_title_in_both_languages():
    titles = {lang: [TITLE[lang].render(name=name) for name in CONDITIONS] for lang in LANGUAGES}
    assert titles["en"] == [
        "Changelog entry",
        "Sweep labels",
        "Pull request",
        "Fork approval",
        "Merge commit",
        "Skip marker",
        "Reuse pin",
        "Stale branch",
        "Sweep size",
        "Sweep run",
    ]
    for lang, found in titles.items():
        assert len(set(found)) == len(CONDITIONS)
        for title in found:
            assert title and title == title.strip() and "\n" not in title
            assert bool(CJK.search(title)) == (lang == "zh"), title
        with pytest.raises(jinja2.UndefinedError, match="no title for bogus"):
            TITLE[lang].render(name="bogus")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_upstream_rollback_names_the_path_both_commits_and_the_pr_that_moved_it(lang):
    line = render(condition("stale branch: submodule rolled back, key uncovered", "stale_branch"), lang)
    for shown in (
        "`utils/srt-slurm`",
        "`ae3d687`",
        "`545233a`",
        "`d00dddd`",
        "#1380",
        "`acme/srt-slurm`",
        "`dsr1-fp4-mi355x-sglang`",
        "`inferencex-e2e/launchers/run.sh`",
        "`f00dfff`",
        "#1402",
    ):
        assert shown in line, shown


def test_the_sha_is_cut_to_seven_characters():
    assert re.fullmatch(r"[0-9a-f]{40}", HEAD) and re.fullmatch(r"[0-9a-f]{40}", OLD_HEAD)
    english = render(condition("skip marker", "skip_marker"), "en")
    assert f"`{HEAD[:7]}`" in english and HEAD[:8] not in english

"""Policy `results.mode`: with a results service (`service`, the default) `/use` stages and a merge ingests; with
none (`none`) `/use` pins and reports, the merge notice names the reused run, and no request goes to any results
service: the replies say so, in both languages."""

from __future__ import annotations

import pytest
from harness import REPO
from test_reuse_command import (  # noqa: F401  the fixtures this module's tests take
    RESULTS,
    command,
    fake_clock,
    finished_run,
    make_harness,
    merge,
    merge_notice,
    pin,
    pinned_and_staged,
    reply_comment_of,
    results_service,
)
from test_run_comments import run_comment
from test_sweep_gate import FAIL_FAST, english, label, open_pull, repo, runs, status  # noqa: F401  the fixtures

from bot.core.config import parse_repo_config
from bot.rules.policy import Policy

NO_SERVICE = "results:\n  mode: none\n"
VIEWER = "https://inferencex.semianalysis.com/"


def no_results_service(github) -> None:
    github.set_file(REPO, ".github/sweepbot.yml", NO_SERVICE)


def chinese(body: str) -> str:
    return body.split("\n## 中文\n", 1)[1]


@pytest.mark.parametrize(
    "text, enabled",
    [("", True), ("results: {mode: service}\n", True), (NO_SERVICE, False)],
)
def test_the_predicate_follows_the_mode(text, enabled):
    """`policy.results.enabled` is what every request to the results service asks first (the merge command too)."""
    policy: Policy = parse_repo_config(text)
    assert policy.results.enabled is enabled


@pytest.mark.parametrize(
    "mode, sent, english_line, chinese_line",
    [
        ("service", ["stage-results"], "⏳ **Staging:** asked of the results service", "⏳ **暂存**：已请求结果服务"),
        (
            "none",
            [],
            "➖ **Staging:** this repository has no results service (its policy says `results.mode: none`), "
            "so nothing was sent to stage this run.",
            "➖ **暂存**：这个仓库没有结果服务（它的策略设置为 `results.mode: none`），"
            "因此没有发送暂存这个 run 的请求。",
        ),
    ],
)
async def test_use_pins_and_stages_only_with_a_results_service(
    repo, make_harness, mode, sent, english_line, chinese_line
):
    if mode == "none":
        no_results_service(repo)
    h = await make_harness()
    run, c = await pinned_and_staged(h, repo, 80)
    assert pin(repo, 80).run_id == run["id"], "the pin stands either way"
    assert [d["event_type"] for d in repo.repository_dispatches(RESULTS)] == sent
    body = reply_comment_of(repo, 80, c)["body"]
    assert english_line in english(body) and chinese_line in chinese(body)
    assert "pinned [run" in english(body)


@pytest.mark.parametrize(
    "pinned, heading",
    [
        (True, "### ✅ Merged: [run"),
        (False, "### ➖ Merged with no run pinned. Nothing to do: this repository has no results service"),
    ],
)
async def test_a_merge_without_a_results_service_asks_for_no_ingest_and_says_so(repo, make_harness, pinned, heading):
    open_pull(repo, 81)
    results_service(repo)
    no_results_service(repo)
    h = await make_harness()
    if pinned:
        run = finished_run(repo, 81)
        await command(h, 81, f"/use {run['id']}")
    else:
        await label(h, 81, FAIL_FAST)
    await merge(h, 81)
    assert repo.repository_dispatches(RESULTS) == []
    text = english(merge_notice(repo, 81)["body"])
    assert heading in text
    if pinned:
        assert "➖ **Ingest:** this repository has no results service" in text
        assert "➖ **导入**：这个仓库没有结果服务" in chinese(merge_notice(repo, 81)["body"])


async def test_a_use_after_the_merge_without_a_results_service_pins_and_asks_for_nothing(repo, make_harness):
    open_pull(repo, 82)
    results_service(repo)
    no_results_service(repo)
    h = await make_harness()
    await label(h, 82, FAIL_FAST)
    await merge(h, 82)
    run = finished_run(repo, 82)
    c = await command(h, 82, f"/use {run['id']}")
    assert repo.repository_dispatches(RESULTS) == []
    assert "The PR is merged already; this repository has no results service, so nothing is ingested." in english(
        reply_comment_of(repo, 82, c)["body"]
    )
    assert "➖ **Ingest:** this repository has no results service" in english(merge_notice(repo, 82)["body"])


async def test_stage_results_without_a_results_service_is_refused_and_sends_nothing(repo, make_harness):
    open_pull(repo, 83)
    results_service(repo)
    no_results_service(repo)
    h = await make_harness()
    c = await command(h, 83, "/stage-results 5")
    assert repo.repository_dispatches(RESULTS) == []
    assert "this repository has no results service" in english(reply_comment_of(repo, 83, c)["body"])


@pytest.mark.parametrize("mode, linked", [("service", True), ("none", False)])
async def test_a_passed_run_links_the_results_viewer_only_with_a_results_service(repo, make_harness, mode, linked):
    """The viewer shows what the results service serves: with none, the status and the run's comment link no
    viewer page (upstream's, by default, which would not know this repository's runs)."""
    open_pull(repo, 84)
    if mode == "none":
        no_results_service(repo)
    h = await make_harness()
    await label(h, 84, FAIL_FAST)
    (run,) = runs(repo)
    repo.set_jobs(REPO, run["id"], [{"name": "bmk", "conclusion": "success"}])
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    comment = run_comment(repo, 84, run["id"])["body"]
    assert " passed on " in english(comment)
    assert (VIEWER in comment) is linked and (VIEWER in status(repo, 84)) is linked


@pytest.mark.parametrize(
    "mode, english_text, chinese_text",
    [
        ("service", "It also asks the results service to stage the run.", "同时请求结果服务暂存（stage）这次运行。"),
        (
            "none",
            "This repository has no results service, so nothing is staged or ingested.",
            "这个仓库没有结果服务，因此不会暂存或导入任何结果。",
        ),
    ],
)
async def test_help_says_what_use_sends_here(repo, make_harness, mode, english_text, chinese_text):
    open_pull(repo, 85)
    if mode == "none":
        no_results_service(repo)
    h = await make_harness()
    c = await command(h, 85, "/help", user="partner", association="CONTRIBUTOR")
    body = reply_comment_of(repo, 85, c)["body"]
    assert english_text in english(body) and chinese_text in chinese(body)

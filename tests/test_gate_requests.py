"""The sweep gate's GitHub request figures (bench/github_requests.py, second table), pinned so the README's table
cannot drift from the code silently."""

from __future__ import annotations

import pytest

from harness import load_bench


BENCH = load_bench("github_requests")

# scenario -> (requests after the token, writes, requests in order), every feature, warm process.
FIGURES = {
    "labeled": (13, 3, "list comments, read PR, list files, compare (merge base), read file at commit, "
                       "read file at commit, list label events, read commit, list runs, dispatch, create comment, "
                       "list check runs, create check run"),
    "labeled_redelivered_new_id": (4, 0, "list comments, read PR (304), list files (304), list label events (304)"),
    # the changelog's one-click fixes (issue 17) list the PR's reviews last, after the dispatch; the PR, the merge
    # base and the files they read too are the gate's, read once per delivery
    "synchronize_new_push": (15, 4, "list files (304), list comments, read PR, compare (merge base), "
                                    "read file at commit (304), read file at commit, list label events (304), "
                                    "read commit, cancel run, list runs, dispatch, edit comment, list check runs, "
                                    "create check run, list reviews"),
    "two_primaries": (7, 3, "list comments, read PR, list files (304), list label events, cancel run, edit comment, "
                            "update check run"),
    # the second `read commit` is GitHub's merge commit: its parents must include the approved head (issue 15)
    "fork_labeled_by_writer": (15, 3, "list comments, read permission, read PR, list files, compare (merge base), "
                                      "read file at commit, read file at commit, list label events, read commit, "
                                      "read commit, list runs, dispatch, create comment, list check runs, "
                                      "create check run"),
    "fork_labeled_by_non_writer": (14, 4, "list comments, read permission, read PR, list files, "
                                          "compare (merge base), read file at commit, read file at commit, "
                                          "list label events, read commit, remove label, create comment, "
                                          "create comment, list check runs, create check run"),
    "invalid_changelog": (11, 2, "list comments, read PR, list files, compare (merge base), read file at commit, "
                                 "read file at commit, list label events, read commit, create comment, "
                                 "list check runs, create check run"),
    "run_completed": (8, 3, "list comments, list run jobs, read PR (304), list files (304), list label events (304), "
                            "edit comment, update check run, create comment"),
    "opened_no_changelog": (5, 1, "list files, list comments, read PR, list check runs, create check run"),
}


def test_every_gate_scenario_has_its_figures_pinned():
    assert [s.__name__ for s in BENCH.GATE_SCENARIOS] == list(FIGURES)


@pytest.mark.parametrize("name", list(FIGURES))
async def test_gate_request_figures(app_key, name):
    count = await getattr(BENCH, name)(app_key)
    assert (count.total, count.writes, count.sequence) == FIGURES[name]
    assert count.auth == 0  # warm: token, App identity and policy cached


async def test_the_gate_figures_say_what_the_scenarios_are_about(app_key):
    """The headline of each row, independent of the exact sequence: one dispatch where a sweep starts, none
    where it must not, and no write at all for a redelivery."""
    dispatches = {name: sum(1 for r in (await getattr(BENCH, name)(app_key)).work
                            if r.method == "POST" and r.path.endswith("/dispatches"))
                  for name in ("labeled", "synchronize_new_push", "two_primaries", "fork_labeled_by_writer",
                               "fork_labeled_by_non_writer", "invalid_changelog")}
    assert dispatches == {"labeled": 1, "synchronize_new_push": 1, "two_primaries": 0, "fork_labeled_by_writer": 1,
                          "fork_labeled_by_non_writer": 0, "invalid_changelog": 0}
    fork = await BENCH.fork_labeled_by_writer(app_key)
    assert any(r.path.endswith("/e2e-tests.yml/dispatches") for r in fork.work), "the trusted workflow"
    assert (await BENCH.labeled_redelivered_new_id(app_key)).writes == 0

"""The maintainers' board: the rule that groups the PRs and fits them in an issue, then the board on the fake GitHub:
off unless asked for, created once with its label and edited in place (never re-created: not after a person closed
it, not after losing the journal), and one edit for a burst of events."""

from __future__ import annotations

import asyncio

import pytest
from harness import REPO, wait_until
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    FAIL_FAST,
    label,
    make_harness,
    no_merge_wait,
    open_pull,
    repo,
    send,
)

from bot.rules import board as rules
from bot.rules.markers import marker
from handlers import board

POLICY = "board:\n  enabled: true\n  title: Sweep board\n  label: sweep-board\n  edit_interval: 60\n"
BOARD = marker("board")


# ---- the rule ------------------------------------------------------------------------------------------


def row(number: int, **facts) -> rules.Row:
    return rules.Row(number, f"PR {number}", "partner", **facts)


@pytest.mark.parametrize(
    "facts, group",
    [
        ({"unknown": ("sw-1-abc",), "sweep": rules.PASSED}, rules.NEEDS_A_PERSON),
        ({"fork": True, "approved": False, "asks": True}, rules.APPROVE),
        ({"sweep": rules.PASSED, "pin": 5, "signoff": rules.SIGNED}, rules.MERGE),
        ({"sweep": rules.PASSED}, rules.PIN),
        ({"pin": 5, "signoff": rules.SIGNOFF_WAITS}, rules.SIGN_OFF),
        ({}, rules.START),
        ({"sweep": rules.FAILED, "asks": True}, rules.AUTHOR),
        ({"draft": True, "sweep": rules.PASSED, "pin": 5, "signoff": rules.SIGNED}, rules.AUTHOR),
        ({"blocked": True, "asks": True}, rules.AUTHOR),
        ({"sweep": rules.QUEUED, "asks": True}, rules.SWEEPING),
        ({"sweep": rules.RUNNING, "asks": True}, rules.SWEEPING),
    ],
    ids=["unknown", "fork", "ready", "green", "pinned", "no-label", "failed", "draft", "blocked", "queued", "running"],
)
def test_next_step(facts, group):
    assert rules.next_step(row(1, **facts)) == group


def test_fitted_cuts_the_last_groups_first_and_says_how_many():
    rows = [row(n, sweep=rules.RUNNING, asks=True) for n in range(1, 31)] + [row(99, sweep=rules.PASSED)]

    def render(shown, left_out):
        return "".join(f"#{r.number} " + "x" * 50 + "\n" for r in shown) + f"{left_out} not shown\n"

    body, cut = rules.fitted(rows, render, 1_000)
    assert len(body) <= 1_000 and cut == 31 - body.count("#")
    assert body.startswith("#99 ") and body.endswith(f"{cut} not shown\n")  # the one to pin comes first
    assert rules.fitted(rows, render, 100_000)[1] == 0


# ---- on the fake GitHub -------------------------------------------------------------------------------


@pytest.fixture
def held(monkeypatch):
    """The board's clock, stopped until the test lets it go: a burst is whatever arrives meanwhile. Returns the
    release and the seconds each wait was asked for."""
    now = [1_000.0]
    waits: list[float] = []

    async def nap(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(0.005)

    def release() -> None:
        now[0] += 10_000

    monkeypatch.setattr(board, "clock", lambda: now[0])
    monkeypatch.setattr(board, "sleep", nap)
    monkeypatch.setattr(board, "_last_edit", {})
    monkeypatch.setattr(board, "_waiting", set())
    return release, waits


def boards(github, state: str = "all") -> list[dict]:
    return [
        i
        for i in github.issues(REPO)
        if "pull_request" not in i and (i.get("body") or "").startswith(BOARD + "\n") and state in ("all", i["state"])
    ]


def board_writes(github) -> list[str]:
    return [
        f"{r.method} {r.path}"
        for r in github.writes
        if r.path.rstrip("/").split("/")[-1] == "issues"
        or (r.method == "PATCH" and "/issues/" in r.path and "comments" not in r.path)
    ]


async def test_the_board_is_off_unless_the_policy_turns_it_on(repo, make_harness, held):
    open_pull(repo, 2)
    h = await make_harness()
    await label(h, 2, FAIL_FAST)
    assert boards(repo) == [] and held[1] == []


async def test_a_burst_of_fifty_events_is_one_board_write_and_the_board_is_edited_in_place(repo, make_harness, held):
    release, waits = held
    repo.set_file(REPO, ".github/sweepbot.yml", POLICY)
    for number in range(1, 6):
        open_pull(repo, number)
    h = await make_harness()

    async def burst(tag: str) -> None:
        ids = [f"{tag}-{i}" for i in range(50)]
        for i, delivery in enumerate(ids):
            await h.post("pull_request", repo.pull_request_payload(REPO, i % 5 + 1, "synchronize"), delivery=delivery)

        async def all_but_one_done() -> bool:
            rows = [await h.journal_row(d) for d in ids]
            return sum(r is not None and r.status == "done" for r in rows) == len(ids) - 1

        # the last delivery that took the wait over holds it; every lane else is free
        await wait_until(all_but_one_done, "every delivery of the burst but the one that edits the board done")
        release()
        await h.idle()

    await burst("first")
    (issue,) = boards(repo)
    assert board_writes(repo).count("POST /repos/acme/InferenceX/issues") == 1
    assert [label["name"] for label in issue["labels"]] == ["sweep-board"] and issue["title"] == "Sweep board"
    assert "5 open PRs tracked" in issue["body"] and "| #3 `MI355X recipe` | `partner` |" in issue["body"]
    assert waits and max(waits) <= board.POLL  # it looked at its lane between naps

    repo.label_issue(REPO, 3, FAIL_FAST, actor="maintainer")  # the burst's events find it: a sweep starts
    repo.reset_requests()
    await burst("second")
    assert len(board_writes(repo)) == 1 and board_writes(repo)[0].startswith("PATCH ")
    (again,) = boards(repo)
    assert again["number"] == issue["number"] and "is running" not in again["body"]
    assert "⏳ [run " in again["body"] and " running since " in again["body"]


async def test_a_closed_board_is_edited_not_opened_again_even_after_losing_the_journal(
    repo, make_harness, held, tmp_path
):
    release, _ = held
    repo.set_file(REPO, ".github/sweepbot.yml", POLICY)
    open_pull(repo, 7)
    h = await make_harness()
    await h.post("pull_request", repo.pull_request_payload(REPO, 7, "opened"))
    await wait_until(lambda: board._waiting, "the board waiting")
    release()
    await h.idle()
    (issue,) = boards(repo)
    repo._repo(REPO).items[issue["number"]]["state"] = "closed"  # a person closed it
    await h.bot.stop()

    board._last_edit.clear()
    fresh = await make_harness(db_path=str(tmp_path / "other.db"))
    repo.label_issue(REPO, 7, FAIL_FAST, actor="maintainer")
    await fresh.post(
        "pull_request", repo.pull_request_payload(REPO, 7, "labeled", sender="maintainer", label=FAIL_FAST)
    )
    await wait_until(lambda: board._waiting, "the board waiting")
    release()
    await fresh.idle()

    (same,) = boards(repo)
    assert same["number"] == issue["number"] and same["state"] == "closed"
    assert "[run " in same["body"]

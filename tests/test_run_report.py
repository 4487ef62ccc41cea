"""The run comment's rules (bot/rules/run_report.py): which finished runs get one, what the jobs
count, which failed jobs are named, and what the comment asks for."""

from __future__ import annotations

import pytest

from bot.rules.run_report import NAME_MAX, SHOWN_FAILED, FailedJob, next_step, purpose, summarize_jobs, wants_comment


@pytest.mark.parametrize(
    "conclusion, superseded, wanted",
    [
        ("success", False, True),
        ("success", True, True),  # a run that finished before it was superseded still reports
        ("failure", True, True),
        ("cancelled", False, True),  # cancelled by a person: worth saying
        ("cancelled", True, False),  # cancelled by the bot for a newer dispatch: the status comment says what runs
        ("timed_out", False, True),
        (None, False, False),  # not finished
    ],
)
def test_which_finished_runs_get_a_comment(conclusion, superseded, wanted):
    assert wants_comment(conclusion, superseded=superseded) is wanted


@pytest.mark.parametrize(
    "conclusion, step",
    [
        ("success", "none"),
        ("skipped", "none"),
        ("neutral", "none"),
        ("failure", "rerun"),
        ("timed_out", "rerun"),
        ("startup_failure", "rerun"),
        ("cancelled", "rerun"),
        ("action_required", "rerun"),
        (None, "none"),
    ],
)
def test_what_the_comment_asks_for(conclusion, step):
    assert next_step(conclusion) == step


def test_each_run_has_its_own_purpose_for_every_attempt():
    assert purpose(7) == "sweep-run-7" and purpose(8) != purpose(7)


@pytest.mark.parametrize(
    "jobs, counts",
    [
        ([], (0, 0, 0, 0, 0)),
        (
            [
                {"id": 1, "name": "a", "conclusion": "success"},
                {"id": 2, "name": "b", "conclusion": "failure"},
                {"id": 3, "name": "c", "conclusion": "skipped"},
                {"id": 4, "name": "d", "conclusion": "cancelled"},
                {"id": 5, "name": "e", "conclusion": "timed_out"},
                {"id": 6, "name": "f", "conclusion": None},
                {"id": 7, "name": "g", "conclusion": "neutral"},
                {"id": 8, "name": "h", "conclusion": "action_required"},
            ],
            (1, 2, 1, 2, 2),
        ),
        (["not a job", {"id": 9, "name": "x", "conclusion": "startup_failure"}], (0, 1, 0, 0, 0)),
    ],
)
def test_jobs_are_counted_by_conclusion(jobs, counts):
    s = summarize_jobs(jobs)
    assert (s.succeeded, s.failed, s.cancelled, s.skipped, s.other) == counts


def test_at_most_twenty_failed_jobs_are_named_and_the_rest_counted():
    jobs = [{"id": i, "name": f"bmk {i}", "conclusion": "failure"} for i in range(1, 26)]
    s = summarize_jobs(jobs + [{"id": 99, "name": "ok", "conclusion": "success"}])
    assert SHOWN_FAILED == 20
    assert s.failed_jobs == tuple(FailedJob(f"bmk {i}", i) for i in range(1, 21))
    assert (s.failed, s.more_failed, s.total) == (25, 5, 26)


def test_a_job_name_is_one_line_and_cut_and_a_job_without_an_id_is_counted_not_named():
    long = {"id": 1, "name": "x" * 500, "conclusion": "failure"}
    broken = {"id": True, "name": "no id", "conclusion": "failure"}
    s = summarize_jobs([{"id": 2, "name": "bmk\n/use 1", "conclusion": "failure"}, long, broken])
    assert s.failed_jobs[0].name == "bmk /use 1"
    assert len(s.failed_jobs[1].name) == NAME_MAX and s.failed_jobs[1].name.endswith("…")
    assert (s.failed, len(s.failed_jobs), s.more_failed) == (3, 2, 1)

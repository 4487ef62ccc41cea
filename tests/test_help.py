"""`/help`, and a known command with wrong arguments, get the command reference as a reply."""

from __future__ import annotations

from dataclasses import replace

import jinja2
import pytest
from harness import REPO

from bot.core.config import default_policy
from bot.core.templates import Templates
from bot.rules.commands import ANYONE, COMMANDS, NO_ARGUMENTS, RUN_ID_OPTIONAL, CommandSpec, find_commands, parse
from bot.rules.markers import marker
from handlers import help_command
from handlers.help_command import help_entries, help_variables, needs_help

POLICY = default_policy()
NAMES = POLICY.commands.names()


# ---- the pure rules ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, wanted",
    [
        ("/help", True),
        ("  /HELP", True),
        ("please see\n/help", True),
        ("/use abc", True),
        ("/use", True),
        ("/use 1 2", True),
        ("/use 0", True),
        ("/reuse-sweep-run x", True),
        ("/stage-results 1 2", True),
        ("/use 123", False),  # valid: the pin handler answers it
        ("/reuse-sweep-run", False),
        ("/stage-results", False),
        ("/path/to/file", False),
        ("/helpme", False),
        ("see /help", False),
        ("`/help`", False),
        ("> /help", False),
        ("```\n/help\n```", False),
        ("<!-- /help -->", False),
        ("    /help", False),
        ("/help\n/use 42", False),  # the last command line counts
        ("", False),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_needs_help(body, wanted):
    assert needs_help(parse(body, NAMES)) is wanted


def test_help_variables_show_the_problem_only_when_there_is_one():
    plain = help_variables(POLICY, "alice", parse("/help", NAMES))
    assert plain == {
        "requester": "alice",
        "commands": help_entries(NAMES),
        "docs_url": POLICY.docs_url,
        "problem": None,
        "results_service": True,
    }
    wrong = help_variables(POLICY, "bob", parse("/use abc", NAMES))
    assert wrong["problem"] == {"text": "/use abc", "key": "run-id-not-numeric"}


def test_help_entries_are_the_registry_in_order_with_the_configured_names():
    names = {"use": "pin", "reuse": "reuse", "stage": "restage", "merge": "land", "help": "commands"}
    assert help_entries(names) == [
        {"kind": "use", "name": "pin", "run_id": "required", "who": "maintainers", "help": "use"},
        {"kind": "reuse", "name": "reuse", "run_id": "optional", "who": "maintainers", "help": "reuse"},
        {"kind": "stage", "name": "restage", "run_id": "optional", "who": "maintainers", "help": "stage"},
        {"kind": "merge", "name": "land", "run_id": "none", "who": "maintainers", "help": "merge"},
        {"kind": "help", "name": "commands", "run_id": "none", "who": "anyone", "help": "help"},
    ]


def render_help(
    monkeypatch, extra: CommandSpec | None, problem: dict | None = None, registry: tuple[CommandSpec, ...] = COMMANDS
) -> str:
    registry = registry + ((extra,) if extra else ())
    monkeypatch.setattr(help_command, "COMMANDS", registry)
    entries = help_entries({spec.kind: spec.default_name for spec in registry})
    return Templates().render(
        "help",
        requester="alice",
        commands=entries,
        docs_url="https://x.example/docs",
        problem=problem,
        results_service=True,
    )


def test_a_new_registry_entry_is_listed_with_its_usage_who_and_argument_rule(monkeypatch):
    """The table and the argument sentence come from the registry: nothing in the template names a command."""
    extra = CommandSpec("info", "info", RUN_ID_OPTIONAL, ANYONE, "stage")  # borrows stage's text
    text = render_help(monkeypatch, extra, {"text": "/use 1 2", "key": "too-many-arguments"})
    english, chinese = text.split("\n## 中文\n")
    assert [line.split(" | ")[0] for line in english.splitlines() if line.startswith("| `/")] == [
        "| `/use <run_id>`",
        "| `/reuse-sweep-run [<run_id>]`",
        "| `/stage-results [<run_id>]`",
        "| `/merge`",
        "| `/help`",
        "| `/info [<run_id>]`",
    ]
    assert (
        "| `/info [<run_id>]` | Asks the results service to stage the run again; without a run id, the run that "
        "is pinned now. | Anyone | `/info 1234567890` |" in english
    )
    assert (
        "followed by at most one argument: `/use` takes exactly one run id, `/reuse-sweep-run`, `/stage-results`"
        " and `/info` take one or none, and `/merge` and `/help` take none."
    ) in english
    assert (
        "后面最多跟一个参数：`/use` 必须带且只能带一个 run id，`/reuse-sweep-run`、`/stage-results` 和 `/info`"
        " 可以带一个或不带，`/merge` 和 `/help` 不带参数。"
    ) in chinese
    assert (
        "| `/info [<run_id>]` | 请求结果服务重新暂存这次运行；不带 run id 时暂存当前固定的 run。 | 任何人 |" in chinese
    )


def test_the_argument_sentence_follows_the_registry_and_agrees_in_number(monkeypatch):
    registry = tuple(replace(spec, run_id=NO_ARGUMENTS) if spec.kind == "stage" else spec for spec in COMMANDS)
    text = render_help(monkeypatch, None, {"text": "/use 1 2", "key": "too-many-arguments"}, registry)
    english, chinese = text.split("\n## 中文\n")
    assert (
        "followed by at most one argument: `/use` takes exactly one run id, `/reuse-sweep-run` takes one or"
        " none, and `/stage-results`, `/merge` and `/help` take none."
    ) in english
    assert (
        "后面最多跟一个参数：`/use` 必须带且只能带一个 run id，`/reuse-sweep-run` 可以带一个或不带，"
        "`/stage-results`、`/merge` 和 `/help` 不带参数。"
    ) in chinese
    assert "| `/stage-results` |" in english and "| `/stage-results` |" in chinese


@pytest.mark.parametrize(
    "extra, message",
    [
        (CommandSpec("deploy", "deploy", RUN_ID_OPTIONAL, ANYONE, "deploy"), "no text for command deploy"),
        (CommandSpec("deploy", "deploy", RUN_ID_OPTIONAL, "owners", "stage"), "no text for who owners"),
        (CommandSpec("deploy", "deploy", "two", ANYONE, "stage"), "no usage for argument rule two"),
    ],
    ids=["no-help-text", "unknown-who", "unknown-argument-rule"],
)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_registry_entry_the_templates_have_no_text_for_cannot_be_rendered(monkeypatch, extra, message, language):
    monkeypatch.setattr(help_command, "COMMANDS", COMMANDS + (extra,))
    template = Templates().environment.get_template(f"help.{language}.md.j2")  # each language on its own
    with pytest.raises(jinja2.UndefinedError, match=message):
        template.render(
            requester="alice",
            commands=help_entries({**NAMES, "deploy": "deploy"}),
            docs_url="https://x.example/docs",
            problem=None,
            results_service=True,
        )


# ---- scenarios ---------------------------------------------------------------------------------------------


def bot_comments(github, number: int = 1) -> list[dict]:
    return [c for c in github.comments(REPO, number) if c["user"]["login"] == github.bot_login]


def repo_writes(github) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in github.writes if not r.path.startswith("/app/")]


async def comment(
    h, body: str, *, number: int = 1, user: str = "partner", user_type: str = "User", delivery: str | None = None
) -> dict:
    created = h.github.add_comment(REPO, number, body, user=user, user_type=user_type)
    await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, number, created), delivery=delivery)
    return created


async def edit(h, original: dict, new_body: str, *, number: int = 1) -> None:
    before = original["body"]
    original["body"] = new_body
    payload = h.github.issue_comment_payload(REPO, number, original, "edited", changes={"body": {"from": before}})
    await h.deliver("issue_comment", payload)


async def test_help_reply_lists_every_command_who_may_use_it_an_example_and_the_docs(harness):
    github = harness.github
    asked = await comment(harness, "How does this work?\n/help")

    [reply] = bot_comments(github)
    body = reply["body"]
    assert body.startswith(marker(f"reply-{asked['id']}") + "\n")
    assert "@partner, these are the commands you can use" in body
    english = body.split("## 中文")[0]
    rows = [line for line in english.splitlines() if line.startswith("| `/")]
    assert [row.split("|")[1].strip() for row in rows] == [
        "`/use <run_id>`",
        "`/reuse-sweep-run [<run_id>]`",
        "`/stage-results [<run_id>]`",
        "`/merge`",
        "`/help`",
    ]
    for row in rows:
        who, example = [cell.strip() for cell in row.split("|")[3:5]]
        assert who in ("Maintainers (write, maintain or admin permission)", "Anyone")
        assert example.startswith("`/")
    assert f"[documentation]({POLICY.docs_url})" in english
    assert f"[文档]({POLICY.docs_url})" in body
    assert find_commands(body, NAMES.values()) == []  # the reply never reads as a command itself


@pytest.mark.parametrize(
    "text, explanation",
    [
        ("/use abc", "A run id is a plain number"),
        ("/use", "needs the id of the run to pin"),
        ("/use 12 34", "A command must be alone on its line"),
        ("/use 0", "it is zero or too large"),
        ("/stage-results #42", "A run id is a plain number"),
    ],
    ids=["not-numeric", "missing", "two-args", "zero", "stage"],
)
async def test_a_known_command_with_wrong_arguments_gets_the_help_with_the_problem(harness, text, explanation):
    await comment(harness, f"Pinning the green run.\n{text}")

    [reply] = bot_comments(harness.github)
    body = reply["body"]
    assert f"@partner, this line was not run:\n\n`{text}`" in body
    assert explanation in body
    assert "| `/use <run_id>` |" in body  # and the full reference below it
    assert find_commands(body, NAMES.values()) == []


@pytest.mark.parametrize(
    "text",
    [
        "/use 123",  # valid: answered by the pin handler, not by help
        "/reuse-sweep-run",
        "/stage-results 99",
        "/path/to/file is where the recipe lives",
        "Compare with /help in the docs",
        "/unknown command",
        "/helpme",
        "> /help",
        "```\n/help\n```",
        "plain text",
    ],
)
async def test_no_reply(harness, text):
    await comment(harness, text)
    assert bot_comments(harness.github) == []
    assert repo_writes(harness.github) == []


@pytest.mark.parametrize(
    "login, user_type", [("sweepbot[bot]", "Bot"), ("github-actions[bot]", "Bot"), ("renovate", "Bot")]
)
async def test_bots_are_never_answered(harness, login, user_type):
    asked = await comment(harness, "/help", user=login, user_type=user_type)
    assert harness.github.comments(REPO, 1) == [asked]
    assert repo_writes(harness.github) == []


async def test_help_on_a_plain_issue_is_ignored(harness):
    github = harness.github
    issue = github.add_issue(REPO, title="Question about sweeps")
    await comment(harness, "/help", number=issue["number"])
    assert bot_comments(github, issue["number"]) == []
    assert repo_writes(github) == []


async def test_an_edit_that_keeps_the_command_makes_no_second_reply(harness):
    github = harness.github
    asked = await comment(harness, "/help")
    [reply] = bot_comments(github)
    github.reset_requests()

    await edit(harness, asked, "/help\n\nThanks in advance!")

    assert bot_comments(github) == [reply]
    assert github.requests == []  # decided from the payload alone


async def test_an_edit_from_a_wrong_use_to_help_updates_the_same_reply(harness):
    github = harness.github
    asked = await comment(harness, "/use x")
    [first] = bot_comments(github)
    assert "this line was not run" in first["body"]

    await edit(harness, asked, "/help")

    [reply] = bot_comments(github)
    assert reply["id"] == first["id"]
    assert "this line was not run" not in reply["body"] and "these are the commands you can use" in reply["body"]
    assert repo_writes(github)[-1] == ("PATCH", f"/repos/{REPO}/issues/comments/{first['id']}")


async def test_an_edit_that_fixes_the_command_leaves_the_reply_alone(harness):
    """`/use x` → `/use 123`: a valid pin is not help's business; the old reply is not rewritten by help."""
    github = harness.github
    asked = await comment(harness, "/use x")
    [first] = bot_comments(github)
    github.reset_requests()

    await edit(harness, asked, "/use 123")

    assert bot_comments(github) == [first]
    assert repo_writes(github) == []


async def test_an_edit_that_adds_help_to_a_plain_comment_is_answered(harness):
    asked = await comment(harness, "Looks good")
    assert bot_comments(harness.github) == []
    await edit(harness, asked, "Looks good\n/help")
    [reply] = bot_comments(harness.github)
    assert reply["body"].startswith(marker(f"reply-{asked['id']}"))


async def test_each_command_comment_gets_its_own_reply_and_redelivery_makes_no_second(harness):
    github = harness.github
    first = await comment(harness, "/help", delivery="c1")
    second = await comment(harness, "/use", user="maintainer")
    assert sorted(c["body"].split("\n", 1)[0] for c in bot_comments(github)) == sorted(
        [marker(f"reply-{first['id']}"), marker(f"reply-{second['id']}")]
    )
    github.reset_requests()

    await harness.deliver("issue_comment", github.issue_comment_payload(REPO, 1, first), delivery="c1")
    await harness.deliver("issue_comment", github.issue_comment_payload(REPO, 1, first), delivery="c1-redelivered")

    assert len(bot_comments(github)) == 2
    assert repo_writes(github) == []


async def test_a_copied_reply_marker_does_not_hijack_the_reply(harness):
    github = harness.github
    asked = github.add_comment(REPO, 1, "/help", user="partner")
    fake = github.add_comment(REPO, 1, marker(f"reply-{asked['id']}") + "\nnot the bot", user="mallory")

    await harness.deliver("issue_comment", github.issue_comment_payload(REPO, 1, asked))

    [reply] = bot_comments(github)
    assert reply["id"] != fake["id"]
    assert fake["body"].endswith("not the bot")


async def test_command_names_come_from_the_repository_policy(make_harness, github):
    github.add_repo(REPO, default_branch="main", installation_id=1)
    github.set_file(REPO, ".github/sweepbot.yml", "commands: {help: commands, use: pin}\n")
    github.add_pull(REPO, number=1, user="partner")
    h = await make_harness()

    await comment(h, "/help")
    assert bot_comments(github) == []
    await comment(h, "/commands")
    [reply] = bot_comments(github)
    assert "| `/pin <run_id>` |" in reply["body"] and "| `/commands` |" in reply["body"]
    assert "`/use" not in reply["body"]

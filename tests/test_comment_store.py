"""The one-comment-per-purpose store: markers, the 65,536-character limit, find / create / edit / keep,
every page read, copied markers ignored, concurrent writers serialised."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from harness import REPO

from bot.core.config import default_policy
from bot.effects.comments import CREATED, KEPT, UNCHANGED, UPDATED, CommentStore
from bot.github.client import GitHubClient, RetryPolicy
from bot.github.connections import ConnectionShards
from bot.rules.commands import find_commands
from bot.rules.markers import BODY_LIMIT, fit, marker, purpose_of
from bot.telemetry.metrics import Metrics

TOKEN = "ghs_store_test_token"


def note(limit: int) -> str:
    return f"**Note:** cut to {limit} characters."


# ---- markers -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("purpose", ["welcome", "reply-123", "sweep:run.2", "a", "config-invalid", "x_y"])
def test_marker_round_trips(purpose):
    assert marker(purpose) == f"<!-- sweepbot:{purpose} -->"
    assert purpose_of(marker(purpose) + "\nbody") == purpose


@pytest.mark.parametrize("purpose", ["", "Welcome", "two words", "x -->", "x --> <!-- y", "-leading", "welcome\n", "ü"])
def test_bad_purposes_are_refused(purpose):
    """Regression ("x -->"): the check matched only a prefix, so a purpose holding " -->" made a marker that
    reads back as another purpose ("x")."""
    with pytest.raises(ValueError):
        marker(purpose)


@pytest.mark.parametrize(
    "body, purpose",
    [
        ("<!-- sweepbot:welcome -->\nhi", "welcome"),
        ("<!-- sweepbot:welcome -->", "welcome"),
        (" <!-- sweepbot:welcome -->\nhi", None),  # only at the very start
        ("hi\n<!-- sweepbot:welcome -->", None),
        ("<!-- sweepbot:Welcome -->", None),
        ("<!-- other:welcome -->", None),
        ("", None),
        (None, None),
    ],
)
def test_purpose_of(body, purpose):
    assert purpose_of(body) == purpose


# ---- fit: GitHub's 65,536-character limit ------------------------------------------------------------------


HEAD = marker("p") + "\n"


@pytest.mark.parametrize("size", [0, 10, BODY_LIMIT - len(HEAD)])
def test_fit_keeps_bodies_within_the_limit_as_they_are(size):
    text = "x" * size
    assert fit("p", text, note) == HEAD + text


NOTE_TAIL = "\n\n" + note(BODY_LIMIT) + "\n"


def kept_text(body: str) -> str:
    assert body.startswith(HEAD) and body.endswith(NOTE_TAIL)
    return body[len(HEAD) : -len(NOTE_TAIL)]


@pytest.mark.parametrize(
    "text",
    [
        "y" * (BODY_LIMIT - len(HEAD) + 1),  # one over
        "line of text\n" * 10_000,  # many lines
        "z" * 200_000,  # one enormous line
        "中文内容\n" * 20_000,  # non-ASCII: the limit counts characters
        "| a | b |\n" + "| ```x``` | inline |\n" * 8_000,  # balanced ``` pairs on each line are not an open fence
    ],
    ids=["one-over", "lines", "one-line", "chinese", "inline-backticks"],
)
def test_fit_cuts_long_bodies_with_a_visible_note_and_keeps_the_marker(text):
    body = fit("p", text, note)
    assert len(body) <= BODY_LIMIT
    kept = kept_text(body)
    assert text.startswith(kept) and len(kept) > BODY_LIMIT - 200  # as much as fits, less the note
    if "\n" in text:
        assert text[len(kept)] == "\n"  # cut at the end of a line


def test_fit_closes_a_code_fence_the_cut_falls_into_and_keeps_its_content():
    """Regression: the cut used to drop everything from the open fence on, so one long code block (a log) left
    only the text before it ("intro") under the note; the fence is now closed after the last whole line."""
    text = "intro\n```\n" + "code line\n" * 10_000 + "```\nafter\n"
    body = fit("p", text, note)
    assert len(body) <= BODY_LIMIT
    kept = kept_text(body)
    assert kept.endswith("\ncode line\n```")
    assert text.startswith(kept[: -len("```")]) and len(kept) > BODY_LIMIT - 200
    assert kept.count("```") % 2 == 0


async def test_a_truncated_comment_is_not_edited_again(github, gh):
    """Regression: the old test compared fit() with itself, which no change could make fail. What matters is
    that the cut body GitHub stored is what the next delivery renders, so it is left alone, not PATCHed."""
    text = "row\n" * 40_000
    store = CommentStore()
    outcome, first = await store.upsert(gh, REPO, 1, "status", fit("status", text, note), github.bot_login)
    assert outcome == "created" and len(first["body"]) <= BODY_LIMIT
    github.reset_requests()
    outcome, _ = await CommentStore().upsert(gh, REPO, 1, "status", fit("status", text, note), github.bot_login)
    assert outcome == "unchanged" and github.count("PATCH") == 0


# ---- CommentStore against the fake GitHub ------------------------------------------------------------------


class YieldingClient(GitHubClient):
    """Lets other tasks run during every request, as a real network does (the mocked transport never waits)."""

    async def _request(self, *args, **kwargs):
        await asyncio.sleep(0.001)
        return await super()._request(*args, **kwargs)


@pytest.fixture
async def gh(github):
    github.add_repo(REPO, default_branch="main", installation_id=1)
    github.add_pull(REPO, number=1, user="partner", head_repo="partner/InferenceX")
    github.add_token(TOKEN, github.bot_login)
    async with httpx.AsyncClient() as http:
        yield YieldingClient(
            ConnectionShards([http]),
            state=None,
            retry=RetryPolicy(attempts=1),
            metrics=Metrics(),
            base_url="https://api.github.com",
            oauth_token=TOKEN,
        )


def mine(github, number: int = 1) -> list[dict]:
    return [c for c in github.comments(REPO, number) if c["user"]["login"] == github.bot_login]


async def test_create_then_unchanged_then_updated_then_kept(github, gh):
    store, bot = CommentStore(), github.bot_login
    body = fit("status", "first", note)

    outcome, created = await store.upsert(gh, REPO, 1, "status", body, bot)
    assert outcome == CREATED and mine(github) == [created]

    github.reset_requests()
    assert (await store.upsert(gh, REPO, 1, "status", body, bot))[0] == UNCHANGED
    assert github.writes == []

    newer = fit("status", "second", note)
    outcome, updated = await store.upsert(gh, REPO, 1, "status", newer, bot)
    assert outcome == UPDATED and updated["id"] == created["id"]
    assert [c["body"] for c in mine(github)] == [newer]

    github.reset_requests()
    outcome, kept = await store.upsert(gh, REPO, 1, "status", fit("status", "third", note), bot, only_if_missing=True)
    assert outcome == KEPT and kept["id"] == created["id"]
    assert github.writes == [] and [c["body"] for c in mine(github)] == [newer]


async def test_purposes_are_separate_comments(github, gh):
    store, bot = CommentStore(), github.bot_login
    await store.upsert(gh, REPO, 1, "welcome", fit("welcome", "w", note), bot)
    await store.upsert(gh, REPO, 1, "reply-7", fit("reply-7", "r", note), bot)
    await store.upsert(gh, REPO, 1, "reply-70", fit("reply-70", "r", note), bot)
    assert sorted(purpose_of(c["body"]) for c in mine(github)) == ["reply-7", "reply-70", "welcome"]


@pytest.mark.parametrize("position", [0, 99, 100, 149])
async def test_every_page_is_read(github, gh, position):
    """With 150 comments (two pages of 100) the bot's comment is found wherever it is."""
    for i in range(150):
        if i == position:
            ours = github.add_comment(REPO, 1, fit("status", "old", note), user=github.bot_login, user_type="Bot")
        else:
            github.add_comment(REPO, 1, f"chatter {i}")
    github.reset_requests()

    outcome, found = await CommentStore().upsert(gh, REPO, 1, "status", fit("status", "new", note), github.bot_login)

    assert outcome == UPDATED and found["id"] == ours["id"]
    assert github.count("GET", r"/issues/1/comments$") == 2
    assert github.count("POST", r"/issues/1/comments$") == 0


@pytest.mark.parametrize(
    "login, user_type",
    [
        ("mallory", "User"),
        ("copycat[bot]", "Bot"),
        ("sweepbot", "User"),  # the App's slug without [bot] is a different (human) account
    ],
)
async def test_a_copied_marker_is_never_the_bots_comment(github, gh, login, user_type):
    fake = github.add_comment(REPO, 1, fit("status", "hijacked", note), user=login, user_type=user_type)
    store = CommentStore()

    outcome, created = await store.upsert(gh, REPO, 1, "status", fit("status", "real", note), github.bot_login)
    assert outcome == CREATED and created["id"] != fake["id"]
    outcome, _ = await store.upsert(gh, REPO, 1, "status", fit("status", "newer", note), github.bot_login)
    assert outcome == UPDATED
    assert fake["body"] == fit("status", "hijacked", note)
    assert github.count("PATCH", rf"/issues/comments/{fake['id']}$") == 0


async def test_concurrent_upserts_of_one_purpose_make_one_comment(github, gh):
    store, bot = CommentStore(), github.bot_login
    bodies = [fit("status", f"version {i % 2}", note) for i in range(8)]

    outcomes = await asyncio.gather(*(store.upsert(gh, REPO, 1, "status", b, bot) for b in bodies))

    assert [o for o, _ in outcomes].count(CREATED) == 1
    assert len(mine(github)) == 1
    assert github.count("POST", r"/issues/1/comments$") == 1


async def test_a_listing_that_lags_behind_a_fresh_create_does_not_cause_a_second_comment(github, gh):
    """GitHub's comment listing can miss a comment created a moment ago; the store remembers what it made."""
    store, bot = CommentStore(), github.bot_login
    body = fit("status", "one", note)
    await store.upsert(gh, REPO, 1, "status", body, bot)

    async def stale_listing():
        return []

    outcome, _ = await store.upsert(gh, REPO, 1, "status", body, bot, listing=stale_listing)
    assert outcome == UNCHANGED
    assert len(mine(github)) == 1


# ---- end to end: a Comment action over the limit -----------------------------------------------------------


async def test_a_reply_over_the_limit_is_cut_with_the_note_never_rejected(harness):
    """A `/use` with a 40,000-character argument is quoted in the English and the Chinese help: ~80,000 chars."""
    github = harness.github
    command = github.add_comment(REPO, 1, "/use " + "r" * 40_000, user="partner")
    payload = github.issue_comment_payload(REPO, 1, command)

    await harness.deliver("issue_comment", payload, delivery="huge")

    [reply] = mine(github)
    body = reply["body"]
    assert len(body) <= BODY_LIMIT
    assert body.startswith(marker(f"reply-{command['id']}") + "\n")
    assert "cut short to fit GitHub's limit of 65536 characters" in body
    assert "超出了 GitHub 单条评论 65536 个字符的上限" in body  # the note is bilingual too
    assert find_commands(body, default_policy().commands.names().values()) == []
    assert (await harness.journal_row("huge")).status == "done"

    github.reset_requests()
    await harness.deliver("issue_comment", payload, delivery="huge-again")  # the cut body compares equal
    assert [r for r in github.writes if not r.path.startswith("/app/")] == []


async def test_a_comment_deleted_meanwhile_is_created_again_on_the_next_change(github, gh):
    """Regression: the store's memory of a fresh comment (kept for GitHub's listing lag) outlived the comment
    when someone deleted it, so the next change PATCHed a missing comment, got 404 and failed the delivery."""
    store, bot = CommentStore(), github.bot_login
    _, created = await store.upsert(gh, REPO, 1, "status", fit("status", "one", note), bot)
    await gh.delete(f"/repos/{REPO}/issues/comments/{created['id']}")  # a maintainer deletes it

    outcome, again = await store.upsert(gh, REPO, 1, "status", fit("status", "two", note), bot)

    assert outcome == CREATED and again["id"] != created["id"]
    assert [c["body"] for c in mine(github)] == [fit("status", "two", note)]

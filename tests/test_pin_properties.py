"""Property: whatever pin commands are written, edited and deleted on a PR, by whom, the pin in the
status comment's record is the one the latest accepted command gives, and follows the comment that holds it.

The real bot (every feature, as `sweepbot serve` runs them) gets each change through the webhook, against the
fake GitHub; a model, written from the rules (docs/spec.md, "Pins") and not from the bot's code, says after
each step what the record must hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness import REPO
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_reuse_command import fake_clock, finished_run  # noqa: F401  (fake_clock: autouse, artifacts unexpired)
from test_sweep_gate import english, make_harness, no_merge_wait, open_pull, repo, status  # noqa: F401

from bot.rules.sweep_record import SweepRecord
from bot.testing.model import user_json

EXAMPLES = 100  # PRs, each a sequence of up to MAX_STEPS changes
MAX_STEPS = 12
MAX_COMMENTS = 4

# Who writes: a maintainer (write), a writer whose permission changes between steps (`lapsed`: write, none, or
# GitHub will not say), a contributor without write, and a person GitHub never confirms (`flaky`: the
# permission API answers 403). Someone else than the author may edit a comment: these, or `admin`.
AUTHORS = ("maintainer", "lapsed", "drive-by", "flaky")
EDITORS = AUTHORS + ("admin",)
# Drawn more often, so that most sequences reach the interesting steps: writers' comments, the comment holding
# the pin, edits by their authors (each weight: how many times it is listed).
WRITERS_FIRST = ("maintainer", "maintainer", "lapsed", "lapsed", "lapsed") + AUTHORS
AUTHOR_EDITS = 6
HOLDER_EDITS = 5

# The texts written, each with its effective command as the model reads it: (kind, run) for a well-formed pin
# command (run: one of the PR's runs named below; None for a bare `/reuse-sweep-run`), "usage" for a pin command
# with a wrong argument (answered by help, pins nothing), None for no command. Two texts with one command are the
# same command.
TEXTS = {
    "/use {ok}": ("use", "ok"),
    "Pinning the green one:\n/use {ok}\nthanks": ("use", "ok"),
    "/use {failed}": ("use", "failed"),
    "/use {expired}": ("use", "expired"),
    "/use {others}": ("use", "others"),
    "/use 987654": ("use", "missing"),
    "/reuse-sweep-run {ok}": ("reuse", "ok"),
    "/reuse-sweep-run {failed}": ("reuse", "failed"),
    "/reuse-sweep-run": ("reuse", None),
    "/use abc": "usage",
    "LGTM": None,
}
# The runs of each PR: `ok` a successful sweep the bot dispatched, with results; `failed` one that failed (a
# pinned id may have failed); `expired` one whose results expired; `others` a run someone else started;
# `missing` a run id the repository does not have. Eligible to be pinned by id: `ok` and `failed`. A bare
# `/reuse-sweep-run` takes the newest eligible successful run: `ok`.
ELIGIBLE = frozenset({"ok", "failed"})
AUTOMATIC = "ok"


def is_pin(command) -> bool:
    return isinstance(command, tuple)


def pinned_run(command) -> str | None:
    """The run a pin command pins when accepted, or None when it is refused (whoever wrote it)."""
    run = AUTOMATIC if command[1] is None else command[1]
    return run if run in ELIGIBLE else None


@dataclass(repr=False)
class Written:
    """A comment of the PR as it stands: the fake's comment, who wrote it, its body and its command (TEXTS)."""

    comment: dict
    author: str
    text: str
    command: object

    def __repr__(self) -> str:  # as hypothesis shows a draw
        return f"<comment {self.comment['id']} by {self.author}: {self.text!r}>"


@dataclass
class Model:
    """The pin docs/spec.md asks for ("Commands", "Pins"), step by step.

    - A new command is a created comment's, or one its author's edit added or changed (another kind or run; the
      same command moved, or the rest of the comment edited, is no new command). An edit by someone else than
      the author runs nothing.
    - A new pin command is accepted when its author is a writer whom GitHub confirms, and its run is eligible.
      Accepted, it pins its run, held by its comment: it is the newest command by creation time (an edit's time
      is the edit's), so it wins over any earlier pin. Refused, it changes no pin held by another comment.
    - The pin a comment holds follows that comment's latest text: deleted, edited (by anyone) so that it holds
      no pin command, or changed into another pin command by someone else than the author -> withdrawn; changed
      by its author into another pin command -> that command decides: accepted, the pin is its run (straight,
      held by the same comment), refused (its run, or its author's permission, refused or unconfirmed) ->
      withdrawn. An edit that leaves its command as it was changes nothing.
    - A withdrawn pin leaves no pin: an older accepted command does not come back (the record holds one pin;
      deleting the comment withdraws it). The record says which pin was withdrawn and why, until a new pin.
    """

    writer: dict[str, bool | None] = field(
        default_factory=lambda: {"maintainer": True, "lapsed": True, "drive-by": False, "flaky": None}
    )
    pin: tuple[str, int] | None = None  # (run, comment id)
    withdrawn: tuple[str, int, str] | None = None  # (run, comment id, reason)

    def accepted(self, author: str, command) -> str | None:
        return pinned_run(command) if is_pin(command) and self.writer[author] is True else None

    def pin_to(self, run: str, comment_id: int) -> None:
        event("pinned" if self.pin is None else "pinned in place of another pin")
        self.pin, self.withdrawn = (run, comment_id), None

    def withdraw(self, reason: str) -> None:
        event(f"withdrawn: {reason}")
        assert self.pin is not None, "withdrawn while nothing is pinned"
        self.withdrawn, self.pin = (*self.pin, reason), None

    def holds(self, written: Written) -> bool:
        return self.pin is not None and self.pin[1] == written.comment["id"]

    def created(self, written: Written) -> None:
        run = self.accepted(written.author, written.command)
        if run is not None:
            self.pin_to(run, written.comment["id"])

    def edited(self, written: Written, editor: str, new) -> None:
        old, by_author = written.command, editor == written.author
        new_command = by_author and new is not None and new != old
        if not self.holds(written):
            run = self.accepted(written.author, new) if new_command else None
            if run is not None:
                self.pin_to(run, written.comment["id"])
        elif not is_pin(new):
            self.withdraw("edited")
        elif new == old:
            pass
        elif not by_author:
            self.withdraw("edited_by_other")
        elif self.writer[written.author] is None:
            self.withdraw("permission_unknown")
        elif self.writer[written.author] is False:
            self.withdraw("unauthorized")
        elif (run := pinned_run(new)) is None:
            self.withdraw("refused")
        else:
            self.pin_to(run, written.comment["id"])

    def deleted(self, written: Written) -> None:
        if self.holds(written):
            self.withdraw("deleted")


# One bot for the whole test, reused by every example (each on a PR of its own): starting one per example would
# make the test many times slower. Keyed by the test's fake GitHub (one per test function).
_bots: dict[int, dict] = {}


def permission(github, h, model: Model, state: bool | None) -> None:
    """`lapsed` gains or loses write permission, or GitHub stops saying; the bot's permission cache forgets the
    old answer, as it does within a few minutes (PERMISSION_TTL)."""
    model.writer["lapsed"] = state
    if state is not None:
        github.set_permission(REPO, "lapsed", "write" if state else "read")
    h.bot.processor.permissions.cache.clear()


def unconfirmed_next(github, model: Model, author: str, command, new_command: bool) -> None:
    """While GitHub will not say `lapsed`'s permission, the one request for it the bot makes when `lapsed` gives
    a new pin command (a command only writers may run) is answered 403."""
    if new_command and is_pin(command) and author == "lapsed" and model.writer["lapsed"] is None:
        github.fail_next("GET", r"/collaborators/lapsed/permission$", 403, json={"message": "Forbidden"})


def check(github, number: int, runs: dict[str, int], model: Model, steps: list) -> None:
    body = status(github, number)
    record = SweepRecord.parse(body)
    got_pin = (record.pin.run_id, record.pin.comment_id) if record.pin else None
    expected_pin = (runs[model.pin[0]], model.pin[1]) if model.pin else None
    assert got_pin == expected_pin, steps
    gone = record.withdrawn
    got_withdrawn = (gone.run_id, gone.comment_id, gone.reason) if gone else None
    expected_withdrawn = (runs[model.withdrawn[0]], *model.withdrawn[1:]) if model.withdrawn else None
    assert got_withdrawn == expected_withdrawn, steps
    if model.withdrawn is not None:
        assert f"The pin of run `{runs[model.withdrawn[0]]}` was withdrawn" in english(body), steps


# The fixtures are function-scoped and shared by every example on purpose: one fake GitHub and one bot for the
# whole test, each example on a new PR (see _bots), so HealthCheck.function_scoped_fixture is suppressed.
@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_the_pin_is_always_the_one_the_latest_accepted_command_gives(repo, make_harness, data):
    """Property: after every create, edit and delete of comments with pin commands (runs eligible or
    not, other text) by writers, non-writers and unconfirmed people, on one or several comments of one PR, the
    record's pin is the model's (see `Model`), and so is the withdrawal the status comment shows."""
    state = _bots.get(id(repo))
    if state is None or state["github"] is not repo:
        repo.fail_next("GET", r"/collaborators/flaky/permission$", 403, times=10**9, json={"message": "Forbidden"})
        state = _bots[id(repo)] = {"github": repo, "h": await make_harness(), "number": 100}
    h, number = state["h"], state["number"]
    state["number"] += 1
    open_pull(repo, number)
    runs = {
        "ok": finished_run(repo, number)["id"],
        "failed": finished_run(repo, number, conclusion="failure")["id"],
        "expired": finished_run(repo, number, expired=True)["id"],
        "others": finished_run(repo, number, by_bot=False)["id"],
        "missing": 987654,
    }
    model = Model()
    permission(repo, h, model, True)
    written: list[Written] = []
    steps: list = []
    for _ in range(data.draw(st.integers(1, MAX_STEPS), label="steps")):
        kinds = (
            (["create"] * 3 if len(written) < MAX_COMMENTS else [])
            + (["edit"] * 5 + ["delete"] if written else [])
            + ["permission"] * (5 if any(w.author == "lapsed" and model.holds(w) for w in written) else 1)
        )
        kind = data.draw(st.sampled_from(kinds))
        if kind == "permission":
            allowed = data.draw(st.sampled_from([False, None, True]), label="lapsed may write")
            steps.append(("permission", allowed))
            permission(repo, h, model, allowed)
            continue
        if kind == "create":
            author, text = data.draw(st.sampled_from(WRITERS_FIRST)), data.draw(st.sampled_from(sorted(TEXTS)))
            steps.append(("create", author, text))
            body = text.format(**runs)
            comment = repo.add_comment(REPO, number, body, user=author, author_association="CONTRIBUTOR")
            one = Written(comment, author, body, TEXTS[text])
            written.append(one)
            unconfirmed_next(repo, model, author, one.command, True)
            await h.deliver("issue_comment", repo.issue_comment_payload(REPO, number, comment))
            model.created(one)
        elif kind == "edit":
            holder = [w for w in written if model.holds(w)]
            one = data.draw(st.sampled_from(written + holder * HOLDER_EDITS))
            editors = [one.author] * AUTHOR_EDITS + [e for e in EDITORS if e != one.author]
            editor, text = data.draw(st.sampled_from(editors)), data.draw(st.sampled_from(sorted(TEXTS)))
            if editor == "lapsed":  # often their permission changed since they wrote it: drawn with the edit
                allowed = data.draw(st.sampled_from(["as it was", False, None]), label="lapsed may write")
                if allowed != "as it was":
                    steps.append(("permission", allowed))
                    permission(repo, h, model, allowed)
            steps.append(("edit", one.comment["id"], editor, text))
            body = text.format(**runs)
            if body == one.text:  # GitHub sends no edit that changes nothing: the same command, other text
                body += "\n(edited)"
            new = TEXTS[text]
            by_author = editor == one.author
            unconfirmed_next(repo, model, one.author, new, by_author and new != one.command)
            before = one.comment["body"]
            one.comment.update(body=body, updated_at=repo._stamp())  # the edit's time, on the fake's clock
            payload = repo.issue_comment_payload(
                REPO, number, one.comment, "edited", changes={"body": {"from": before}}
            )
            payload["sender"] = user_json(editor)
            await h.deliver("issue_comment", payload)
            model.edited(one, editor, new)
            one.text, one.command = body, new
        else:
            one = data.draw(st.sampled_from(written))
            steps.append(("delete", one.comment["id"]))
            written.remove(one)
            await h.deliver("issue_comment", repo.issue_comment_payload(REPO, number, one.comment, "deleted"))
            model.deleted(one)
        check(repo, number, runs, model, steps)

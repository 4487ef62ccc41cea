"""Sign-off verification (docs/spec.md, "Sign-offs"): which comment is a sign-off, each check the bot can
decide, and the verdict."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.rules.checklist import ChecklistResult, Template, TemplateProblem, normalise
from bot.rules.codeowners import CodeOwners, Rule, handles, owned_files
from bot.rules.gate import DONE, FIX, MARK_SYMBOLS, NOT_APPLICABLE
from bot.rules.gate import WAIT as WAITING
from bot.rules.markdown import mentions, prose
from bot.rules.message_schemas import out_of_bounds, validator
from bot.rules.policy import VerifiedItem

# Where a sign-off lives, as the verdict's purpose names it: `signoff-comment-12`, `signoff-review-34`, ...
SOURCES = {"issue_comment": "comment", "pull_request_review": "review", "pull_request_review_comment": "review-comment"}
PURPOSE_PREFIX = "signoff-"
CHECK_NAME = "signoff"  # the check run on a PR's head that says whether its sign-offs pass
CHECKS = ("codeowner", "groups", "sweep", "reuse", "checklist")  # the checks the bot decides, in display order
# A sign-off's own checks: while they pass, a current sign-off covers the owner groups its signer owns. The others
# are the PR's (its sweep, its pin) or the sign-offs' together (the owner groups).
OWN_CHECKS = ("codeowner", "checklist")
# A verdict's outcome: PASS; WAIT while its own checks hold and it waits on others (the sweep, a maintainer's pin,
# the other owner groups' sign-offs); FAIL when one of its own checks fails (something the signer, or whoever
# keeps CODEOWNERS and the checklist, must change).
PASS, FAIL, WAIT = "pass", "fail", "wait"
# The checks that wait on others when they fail (each check's mark is one of bot.rules.gate's, the marks every
# text uses): a maintainer's pin, another owner group's sign-off; and the sweep while no run of it has finished.
WAITING_CODES = (("reuse", "no_pin"), ("reuse", "pin_invalid"), ("groups", "uncovered"))
FRESH, STALE, WITHDRAWN = "fresh", "stale", "withdrawn"
SHOWN_FILES = 20  # files (and their owners) a verdict names; the rest are counted
SHOWN_GROUPS = 20  # owner groups a verdict lists; the rest are counted
GROUP_FILES = 3  # files a verdict names per owner group
SHOWN_ITEMS = 20  # checklist items a verdict lists per kind of problem
ITEM_CHARS = 160  # a long checklist item is shown up to this many characters
# The judge workflow's answer (`repository_dispatch` of type JUDGED): every key a string; its schema is
# examples/schemas/signoff-judged.callback.schema.json (these names say what it says: tests/test_message_schemas.py).
JUDGED = "signoff-judged"
JUDGE_KEYS = ("pr-number", "signoff-id", "head-sha", "verdict", "summary", "run-url")
JUDGE_OPTIONAL = ("dispatch-id",)  # when sent, it must be the id of the judge run the bot dispatched


@dataclass(frozen=True)
class Signoff:
    """A comment or review that contains the sign-off phrase."""

    source: str  # comment, review or review-comment
    id: int
    signer: str
    body: str
    url: str
    signed_at: str = ""  # when its author last wrote it (ISO 8601, as GitHub gives it): which is a signer's newest
    commit_id: str = ""  # a review's or a line comment's commit, the one it was written on ("" for a comment)

    @property
    def key(self) -> str:
        return f"{self.source}-{self.id}"

    @property
    def purpose(self) -> str:
        return PURPOSE_PREFIX + self.key


@dataclass(frozen=True)
class Check:
    name: str  # one of CHECKS
    ok: bool | None  # None: does not apply (➖)
    code: str  # what the verdict's line says, see templates/_signoff_check.*
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepRun:
    """A run of the sweep workflow as the sign-off sees it: `pr_sha` is the PR commit it swept (for a fork's
    run on the default branch, the head the bot dispatched it for)."""

    run_id: int
    pr_sha: str
    status: str
    conclusion: str | None
    url: str
    created_at: str = ""


# -- which comment is a sign-off ------------------------------------------------------------------


def has_phrase(body: str | None, phrase: str) -> bool:
    """Whether `body` says the sign-off phrase in its visible prose (`bot.rules.markdown.prose`): not in a quote (a
    reply quoting a sign-off is not one), code or an HTML comment. Compared after normalising whitespace, links and
    emphasis, ignoring case. A body that lacks a word of the phrase is refused before it is parsed."""
    wanted = normalise(phrase).casefold()
    if not wanted or not mentions(body, wanted):
        return False
    return wanted in normalise(prose(body)).casefold()


def signoff_of(event: str, data: Mapping[str, Any], phrase: str) -> Signoff | None:
    """The sign-off this delivery carries (its phrase present), or None."""
    source = SOURCES.get(event)
    holder = data.get("review" if event == "pull_request_review" else "comment")
    if source is None or not isinstance(holder, Mapping):
        return None
    if event == "issue_comment" and "pull_request" not in (data.get("issue") or {}):
        return None
    return signoff_in(source, holder, phrase)


def signoff_in(source: str, holder: Mapping[str, Any], phrase: str) -> Signoff | None:
    """The sign-off a comment or review (`source`: comment, review or review-comment) is, or None."""
    body = holder.get("body") or ""
    if not isinstance(holder.get("id"), int) or not has_phrase(body, phrase):
        return None
    user = holder.get("user") or {}
    written = holder.get("updated_at") or holder.get("submitted_at") or holder.get("created_at") or ""
    commit = "" if source == "comment" else holder.get("original_commit_id") or holder.get("commit_id") or ""
    return Signoff(
        source,
        int(holder["id"]),
        user.get("login") or "",
        body,
        holder.get("html_url") or "",
        str(written),
        str(commit),
    )


def edited_by_someone_else(event: str, data: Mapping[str, Any]) -> str | None:
    """The login of whoever edited a comment or review written by someone else, or None. Only the author
    signs: a maintainer editing a CODEOWNER's comment into the phrase signs nothing in the CODEOWNER's name."""
    holder = data.get("review" if event == "pull_request_review" else "comment")
    if data.get("action") != "edited" or not isinstance(holder, Mapping):
        return None
    editor = (data.get("sender") or {}).get("login") or ""
    author = (holder.get("user") or {}).get("login") or ""
    return editor if editor.casefold() != author.casefold() else None


def parse_key(key: str) -> tuple[str, int] | None:
    """(source, id) of a sign-off key `<source>-<id>`."""
    source, _, number = key.rpartition("-")
    return (source, int(number)) if source in SOURCES.values() and number.isdigit() else None


def source_key(event: str, data: Mapping[str, Any]) -> str | None:
    """`<source>-<id>` of the comment or review a delivery is about, phrase or not (for edits and deletions)."""
    holder = data.get("review" if event == "pull_request_review" else "comment")
    if event not in SOURCES or not isinstance(holder, Mapping) or holder.get("id") is None:
        return None
    return f"{SOURCES[event]}-{int(holder['id'])}"


# -- which commit a sign-off is for ---------------------------------------------------------------


def written_on(signoff: Signoff, timeline: Iterable[Mapping[str, Any]]) -> str:
    """The commit a sign-off is for: a review's or a line comment's own commit (the one its author was shown);
    for a comment, the PR's head when it was last written, by the PR's timeline (`head_at`). "" when that head
    cannot be named (a force push replaced it, and GitHub lists the PR's commits as they are now)."""
    if signoff.source != "comment":
        return signoff.commit_id
    return head_at(timeline, signoff.signed_at) or ""


def head_at(timeline: Iterable[Mapping[str, Any]], when: str) -> str | None:
    """The PR's head at `when`, by its timeline (GitHub's issue timeline API, every page): a
    `head_ref_force_pushed` event made its `commit_id` the head at its `created_at`, a time GitHub sets; a
    `committed` event has no time of its own but the commit's committer date, which its committer sets (a commit
    made before and pushed after `when` looks earlier: the push's `synchronize` puts that right, `after_push`).

    The head is the target of the last head change at or before `when` that names one (the one listed last among
    equal times; GitHub may leave a force push's `commit_id` out). A force push after `when` may have brought
    any commit listed now, whatever its date: then only force pushes count. None when no head change is known to
    be that early."""
    written = _moment(when)
    if written is None:
        return None
    changes: list[tuple[datetime, int, str | None, bool]] = []  # (when, position, the new head, a force push)
    for position, event in enumerate(timeline):
        if event.get("event") == "head_ref_force_pushed":
            moment, sha, forced = _moment(event.get("created_at")), event.get("commit_id"), True
        elif event.get("event") == "committed":
            moment, sha, forced = _moment((event.get("committer") or {}).get("date")), event.get("sha"), False
        else:
            continue
        if moment is not None:
            changes.append((moment, position, sha if isinstance(sha, str) and sha else None, forced))
    rewritten = any(forced and moment > written for moment, _, _, forced in changes)
    earlier = [c for c in changes if c[0] <= written and c[2] is not None and (c[3] or not rewritten)]
    return max(earlier, key=lambda c: c[:2])[2] if earlier else None


def _moment(value: Any) -> datetime | None:
    """An ISO 8601 time as GitHub writes them (a time without a zone is UTC), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def push_time(pull: Mapping[str, Any]) -> str:
    """When GitHub says a `synchronize` delivery's push happened, at the latest: the later of the PR's
    `updated_at` and its head repository's `pushed_at` (GitHub's own times, set by the push; a later one only
    makes more verdicts stale). "" when it gives neither."""
    head_repo = (pull.get("head") or {}).get("repo") or {}
    times = [str(pull.get("updated_at") or ""), str(head_repo.get("pushed_at") or "")]
    known = [(moment, text) for text in times if (moment := _moment(text)) is not None]
    return max(known)[1] if known else ""


def after_push(
    records: Mapping[str, Mapping[str, Any]], before: str, after: str, pushed_at: str
) -> dict[str, dict[str, Any]]:
    """The verdicts a push from `before` to `after` changes, by key: every verdict not withdrawn and for another
    commit is stale, now at `after`; and a comment's verdict for `after` itself that was written no later than
    `pushed_at` (the time GitHub gives the push) was bound by a commit date that came before the push: it is for
    `before`, and stale."""
    pushed = _moment(pushed_at)
    changed: dict[str, dict[str, Any]] = {}
    for key, record in records.items():
        if record.get("state") == WITHDRAWN:
            continue
        if record.get("head_sha") != after:
            if record.get("state") != STALE or record.get("current_sha") != after:
                changed[key] = {**record, "state": STALE, "current_sha": after}
            continue
        written = _moment(record.get("signed_at"))
        if (
            record.get("source") == "comment"
            and before
            and pushed is not None
            and written is not None
            and written <= pushed
        ):
            changed[key] = {**record, "head_sha": before, "state": STALE, "current_sha": after}
    return changed


# -- the checks -----------------------------------------------------------------------------------


def teams_to_ask(codeowners: CodeOwners, files: Iterable[str]) -> list[str]:
    """The `@org/team` owners of the winning rules for `files`: the ones whose membership decides."""
    teams: set[str] = set()
    for path in files:
        match = codeowners.owners_of(path)
        if match:
            teams |= {owner[1:] for owner in match.rule.owners if "/" in owner and owner.startswith("@")}
    return sorted(teams, key=str.casefold)


def _owners_table(codeowners: CodeOwners, files: list[str]) -> list[dict[str, Any]]:
    rows = []
    for path in files:
        match = codeowners.owners_of(path)
        rows.append(
            {
                "path": path,
                "owners": list(match.rule.owners) if match else [],
                "line": match.rule.line if match else None,
            }
        )
    return rows


@dataclass(frozen=True)
class OwnerGroup:
    """The owners of one CODEOWNERS line (or of several lines that name the same owners): GitHub's code-owner
    rule asks a review of each changed file from one owner of its last matching line."""

    key: str  # the owners, lower-cased and sorted: the same group however the lines order or spell them
    owners: tuple[str, ...]  # as its first line writes them
    lines: tuple[int, ...]
    files: tuple[str, ...]  # the changed files it owns


def group_key(owners: Iterable[str]) -> str:
    return " ".join(sorted({owner.lower() for owner in owners}))


def owner_groups(codeowners: CodeOwners, files: Iterable[str]) -> list[OwnerGroup]:
    """The owner groups of the changed `files` that have owners (the last matching line wins; a line without
    owners un-owns), in the order of their first line."""
    found: dict[str, tuple[tuple[str, ...], list[int], list[str]]] = {}
    for path in files:
        match = codeowners.owners_of(path)
        if match is None or not match.rule.owners:
            continue
        owners, lines, owned = found.setdefault(group_key(match.rule.owners), (match.rule.owners, [], []))
        if match.rule.line not in lines:
            lines.append(match.rule.line)
        owned.append(path)
    groups = [
        OwnerGroup(key, owners, tuple(sorted(lines)), tuple(owned)) for key, (owners, lines, owned) in found.items()
    ]
    return sorted(groups, key=lambda g: g.lines)


def covers(
    groups: Iterable[OwnerGroup], signer: str, member_of: Collection[str], sufficient: Collection[str] = ()
) -> tuple[list[str], str]:
    """The keys of the groups `signer` owns (named in them, or an active member of a team named in them), and
    the owner among `sufficient` (policy `signoff.sufficient_owners`) through which the signer owns one of them,
    if any: then the signer's sign-off covers every group ("" otherwise)."""
    groups = list(groups)
    mine = handles(signer, member_of)
    owned = [g for g in groups if any(owner.lower() in mine for owner in g.owners)]
    through = next(
        (
            owner
            for g in owned
            for owner in g.owners
            if owner.lower() in mine and owner.lower() in {s.lower() for s in sufficient}
        ),
        "",
    )
    return [g.key for g in (groups if through else owned)], through


def group_rows(groups: Iterable[OwnerGroup]) -> list[dict[str, Any]]:
    """The groups as a verdict keeps them: each with its first few files and the number of the rest."""
    return [
        {
            "key": g.key,
            "owners": list(g.owners),
            "lines": list(g.lines),
            "files": list(g.files[:GROUP_FILES]),
            "more": max(0, len(g.files) - GROUP_FILES),
        }
        for g in groups
    ]


def codeowner_check(
    codeowners: CodeOwners | None,
    files: list[str],
    signer: str,
    member_of: Collection[str],
    unreadable_teams: Collection[str] = (),
    *,
    path: str = "",
    authored: bool = False,
    sufficient: str = "",
) -> Check:
    """The signer may sign: an owner of at least one changed file by the base branch's CODEOWNERS (last matching
    rule wins), and not the PR's author (`authored`: the signer opened the PR and the policy does not let an
    author sign). `member_of` are the teams (`org/slug`) GitHub says the signer is an active member of;
    `sufficient`, the owner through which the policy lets this sign-off cover every owner group."""
    if codeowners is None:
        return Check("codeowner", False, "no_codeowners", {"path": path})
    if not files:
        return Check("codeowner", False, "no_files", {})
    owned: list[tuple[str, Rule]] = owned_files(codeowners, files, signer, {signer: set(member_of)})
    problems = [{"line": p.line, "reason": p.reason} for p in codeowners.problems[:5]]
    if owned and not authored:
        rows = [{"path": f, "owners": list(rule.owners), "line": rule.line} for f, rule in owned]
        return Check(
            "codeowner",
            True,
            "owns",
            {
                "files": rows[:SHOWN_FILES],
                "more": max(0, len(rows) - SHOWN_FILES),
                "total": len(files),
                "problems": problems,
                "sufficient": sufficient,
            },
        )
    rows = _owners_table(codeowners, files)
    code = "own_pr" if authored else "team_unreadable" if unreadable_teams else "not_owner"
    return Check(
        "codeowner",
        False,
        code,
        {
            "files": rows[:SHOWN_FILES],
            "more": max(0, len(rows) - SHOWN_FILES),
            "teams": sorted(unreadable_teams),
            "problems": problems,
        },
    )


def groups_check(groups: Sequence[Mapping[str, Any]] | None, by: Mapping[str, list[str]]) -> Check:
    """Every owner group of the changed files (`groups`, as `group_rows` keeps them) is covered by a current,
    valid sign-off of the PR's head (`by`: group key -> the signers covering it). The groups still needing a
    sign-off are listed first. None for `groups`: a verdict written before the bot checked owner groups."""
    if groups is None:
        return Check("groups", False, "not_checked", {})
    if not groups:
        return Check("groups", None, "no_groups", {})
    rows = [
        {**{k: v for k, v in g.items() if k != "key"}, "by": sorted(by.get(g["key"], []), key=str.casefold)}
        for g in groups
    ]
    rows.sort(key=lambda row: bool(row["by"]))  # stable: those needing a sign-off first, each in CODEOWNERS order
    missing = sum(1 for row in rows if not row["by"])
    params = {
        "groups": rows[:SHOWN_GROUPS],
        "more": max(0, len(rows) - SHOWN_GROUPS),
        "total": len(rows),
        "missing": missing,
    }
    return Check("groups", missing == 0, "covered" if missing == 0 else "uncovered", params)


def green_run(runs: Iterable[SweepRun], pr_commits: Collection[str]) -> SweepRun | None:
    """The newest completed, successful run on a commit still in the PR."""
    commits = set(pr_commits)
    eligible = [r for r in runs if r.status == "completed" and r.conclusion == "success" and r.pr_sha in commits]
    return max(eligible, key=lambda r: (r.created_at, r.run_id), default=None)


def sweep_check(runs: list[SweepRun], pr_commits: Collection[str], *, pinned: SweepRun | None, asked: bool) -> Check:
    """A green sweep on a commit of this PR, or the valid reuse pin; N/A when the PR asks for no sweep."""
    if pinned is not None:
        return Check("sweep", True, "pinned_run", _run_params(pinned))
    found = green_run(runs, pr_commits)
    if found is not None:
        return Check("sweep", True, "green_run", _run_params(found))
    if not asked:
        return Check("sweep", None, "not_asked", {})
    latest = max((r for r in runs if r.pr_sha in set(pr_commits)), key=lambda r: (r.created_at, r.run_id), default=None)
    return Check("sweep", False, "no_green_run", {"latest": _run_params(latest) if latest else None})


def _run_params(run: SweepRun) -> dict[str, Any]:
    return {"run_id": run.run_id, "url": run.url, "sha": run.pr_sha, "status": run.status, "conclusion": run.conclusion}


def reuse_check(
    pin_run_id: int | None, pin_by: str | None, pin_code: str | None, *, required: bool, asked: bool
) -> Check:
    """An authorized reuse command pinned a run and that run is still eligible (`pin_code` is the reuse
    module's verdict code for it, "eligible" when it is)."""
    if not required:
        return Check("reuse", None, "not_required", {})
    if pin_run_id is None:
        return Check("reuse", None, "not_asked", {}) if not asked else Check("reuse", False, "no_pin", {})
    params = {"run_id": pin_run_id, "by": pin_by or "", "verdict": pin_code or ""}
    if pin_code == "eligible":
        return Check("reuse", True, "pinned", params)
    return Check("reuse", False, "pin_invalid", params)


def _item_text(text: str) -> str:
    text = normalise(text)
    return text if len(text) <= ITEM_CHARS else text[: ITEM_CHARS - 1].rstrip() + "…"


def checklist_check(
    template: Template | TemplateProblem | None, result: ChecklistResult | None, signer: str, *, path: str
) -> Check:
    """Every item of the base branch's template is in the sign-off and ticked, and `Signed:` names the signer."""
    if template is None:
        return Check("checklist", False, "no_checklist", {"path": path})
    if isinstance(template, TemplateProblem):
        return Check("checklist", False, "template_problem", {"path": path, "reason": template.reason})
    assert result is not None
    if result.ok:
        return Check("checklist", True, "complete", {"count": len(template.items), "signer": signer})
    return Check(
        "checklist",
        False,
        "incomplete",
        {
            "missing": [_item_text(i.text) for i in result.missing[:SHOWN_ITEMS]],
            "unticked": [_item_text(i.text) for i in result.unticked[:SHOWN_ITEMS]],
            "changed": [
                {"item": _item_text(i.text), "written": _item_text(w)} for i, w in result.changed[:SHOWN_ITEMS]
            ],
            "more": max(0, len(result.missing) + len(result.unticked) + len(result.changed) - 3 * SHOWN_ITEMS),
            "signed_by": result.signed_by,
            "signed_ok": result.signed_ok,
            "signer": signer,
            "count": len(template.items),
        },
    )


def not_verified(template: Template | TemplateProblem | None, covered: Iterable[VerifiedItem]) -> list[str]:
    """The template's items that need judgement, each whole (the verdict lists them collapsed): every item but
    those a bot check covers (policy `signoff.verified_items`: a check name and a phrase the item's text
    contains, ignoring case)."""
    if not isinstance(template, Template):
        return []
    phrases = [normalise(c.contains).casefold() for c in covered]
    return [normalise(i.text) for i in template.items if not any(p in i.normalised.casefold() for p in phrases)]


def covered_items(template: Template | TemplateProblem | None, covered: Iterable[VerifiedItem]) -> list[dict[str, str]]:
    """The template's items a bot check stands for, with that check's name."""
    if not isinstance(template, Template):
        return []
    rows = []
    for item in template.items:
        check = next((c.check for c in covered if normalise(c.contains).casefold() in item.normalised.casefold()), None)
        if check is not None:
            rows.append({"item": _item_text(item.text), "check": check})
    return rows


# -- the verdict ----------------------------------------------------------------------------------


def mark(check: Check) -> str:
    """What a check's line shows (bot.rules.gate's marks): DONE, NOT_APPLICABLE, WAIT for something no one on the
    PR has to fix (a sweep not started or not finished, a maintainer's pin, another owner group's sign-off), or FIX
    (every other failing check: the sign-off's own, or a sweep whose latest run ended without success)."""
    if check.ok is not False:
        return DONE if check.ok else NOT_APPLICABLE
    if check.name == "sweep" and check.code == "no_green_run":
        latest = check.params.get("latest")
        return WAITING if not latest or latest.get("status") != "completed" else FIX
    return WAITING if (check.name, check.code) in WAITING_CODES else FIX


def outcome(checks: Iterable[Check]) -> str:
    """FAIL when one of the sign-off's own checks fails (OWN_CHECKS, or the owner groups of a verdict written before
    they were checked); else WAIT while another check fails (the sweep, the pin, the other owner groups); else
    PASS (a check that does not apply does not fail)."""
    failing = [c for c in checks if c.ok is False]
    if any(c.name in OWN_CHECKS or (c.name == "groups" and c.code == "not_checked") for c in failing):
        return FAIL
    return WAIT if failing else PASS


def check_rows(checks: Iterable[Check]) -> list[dict[str, Any]]:
    """The checks as a verdict keeps them, in display order (`ordered`)."""
    return [{"name": c.name, "ok": c.ok, "code": c.code, "params": c.params} for c in ordered(checks)]


def shown(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A verdict's checks as its text shows them: each with its `mark` and that mark's `symbol`, the open ones (FIX,
    then WAIT) first."""
    checks = [Check(row["name"], row["ok"], row["code"], dict(row.get("params") or {})) for row in rows]
    return [
        {
            "name": c.name,
            "ok": c.ok,
            "code": c.code,
            "params": c.params,
            "mark": mark(c),
            "symbol": MARK_SYMBOLS[mark(c)],
        }
        for c in ordered(checks)
    ]


def ordered(checks: Iterable[Check]) -> list[Check]:
    """Those a person must fix first, then those waiting, then passing, then those that do not apply; CHECKS order
    within each."""
    rank = {FIX: 0, WAITING: 1, DONE: 2, NOT_APPLICABLE: 3}
    return sorted(checks, key=lambda c: (rank[mark(c)], CHECKS.index(c.name) if c.name in CHECKS else len(CHECKS)))


def freshness(verified_sha: str, head_sha: str, withdrawn: bool = False) -> str:
    if withdrawn:
        return WITHDRAWN
    return FRESH if verified_sha == head_sha else STALE


PENDING = "pending"  # the `signoff` check while a current sign-off waits: in progress, no conclusion yet


def check_conclusion(records: Mapping[str, Mapping[str, Any]], head_sha: str) -> str:
    """The `signoff` check run on `head_sha`, as its verdicts say: "success" when a current sign-off of that very
    head passed (its outcome counts the owner groups of every current sign-off: `settle`); PENDING while none
    passed and one waits (on the sweep, a pin or the other owner groups); "failure" otherwise."""
    outcomes = {records[key].get("outcome") for key in current(records.values(), head_sha)}
    return "success" if PASS in outcomes else PENDING if WAIT in outcomes else "failure"


def valid(record: Mapping[str, Any]) -> bool:
    """A verdict's own checks (OWN_CHECKS) passed: its sign-off covers the groups its signer owns."""
    checks = {c.get("name"): c.get("ok") for c in record.get("checks") or []}
    return all(checks.get(name) is True for name in OWN_CHECKS) and "groups" in record


def settle(records: Mapping[str, Mapping[str, Any]], head_sha: str) -> dict[str, dict[str, Any]]:
    """The current verdicts of `head_sha` (`current`), each with its owner-groups check and its outcome as the
    current sign-offs stand together: a group is covered by a valid current sign-off whose signer owns it (its
    record's `covers`). A verdict written before the groups were checked covers none and fails that check."""
    keys = current(records.values(), head_sha)
    by: dict[str, list[str]] = {}
    for key in keys:
        if valid(records[key]):
            for group in records[key].get("covers") or []:
                by.setdefault(group, []).append(str(records[key].get("signer") or ""))
    settled = {}
    for key in keys:
        record = records[key]
        checks = [
            Check(c["name"], c["ok"], c["code"], c.get("params") or {})
            for c in record.get("checks") or []
            if c.get("name") != "groups"
        ]
        checks.append(groups_check(record.get("groups"), by))
        settled[key] = {**record, "outcome": outcome(checks), "checks": check_rows(checks)}
    return settled


def current(records: Iterable[Mapping[str, Any]], head_sha: str) -> list[str]:
    """The keys of the verdicts to verify again when an input other than the head changes (a sweep finished, a
    pin set or withdrawn, the base branch, a re-run of the check): each signer's newest sign-off (by when it was
    last written, then its id) among those verified on `head_sha` and not withdrawn. A stale verdict stays
    stale until it is signed again; a signer's older sign-offs are superseded by the newest."""
    newest: dict[str, Mapping[str, Any]] = {}
    for record in records:
        if record.get("state") != FRESH or record.get("head_sha") != head_sha or not record.get("signoff"):
            continue
        signer = str(record.get("signer") or "").casefold()
        if signer not in newest or _written(record) > _written(newest[signer]):
            newest[signer] = record
    return sorted(str(r["signoff"]) for r in newest.values())


def _written(record: Mapping[str, Any]) -> tuple[str, int]:
    parsed = parse_key(str(record.get("signoff") or ""))
    return str(record.get("signed_at") or ""), parsed[1] if parsed else 0


def judge_result(payload: Any) -> dict[str, Any] | str:
    """The judge workflow's `signoff-judged` callback: {pr, signoff, head_sha, verdict, summary, run_id,
    dispatch_id, ignored}, or the reason it is refused. The payload is held to bot.rules.message_schemas'
    bounds, then validated against examples/schemas/signoff-judged.callback.schema.json; the first field (in
    JUDGE_KEYS + JUDGE_OPTIONAL order) the schema refuses is named in the reason. Any other key is ignored
    (listed in `ignored`, for the log): the workflow may send more than the bot reads. `run-url` is read for its
    run id only (the bot links the run it dispatched itself, never a URL it was sent)."""
    if not isinstance(payload, Mapping):
        return "client_payload is not an object"
    bounds = out_of_bounds(payload)
    if bounds is not None:
        return f"client_payload is too large: {bounds.reason}"
    payload = payload if isinstance(payload, dict) else dict(payload)
    refused = {_judge_field(error) for error in validator(f"{JUDGED}.callback").iter_errors(payload)}
    for key in JUDGE_KEYS + JUDGE_OPTIONAL:
        if key in refused:
            return JUDGE_REASONS[key]
    if refused:  # a field the schema checks that the bot does not read: none today
        return f"client_payload is not a {JUDGED} answer ({', '.join(sorted(map(str, refused)))[:120]})"
    ignored = sorted(str(key)[:40] for key in payload if key not in JUDGE_KEYS + JUDGE_OPTIONAL)[:20]
    summary, url = payload.get("summary", ""), payload.get("run-url")
    return {
        "pr": int(payload["pr-number"]),
        "signoff": payload["signoff-id"],
        "head_sha": payload["head-sha"],
        "verdict": payload["verdict"],
        "summary": summary.strip(),
        "run_id": int(url.split("/actions/runs/", 1)[1].split("/", 1)[0]) if url else None,
        "dispatch_id": payload.get("dispatch-id"),
        "ignored": ignored,
    }


# Why a judge answer is refused, by the first field its schema refuses.
JUDGE_REASONS = {
    "pr-number": "pr-number must be a PR number as a string",
    "signoff-id": "signoff-id must be <comment|review|review-comment>-<id>",
    "head-sha": "head-sha must be 40 lower-case hex digits",
    "verdict": "verdict must be pass, fail or error",
    "summary": "summary must be a string of at most 2000 characters",
    "run-url": "run-url must be an https link to a workflow run",
    "dispatch-id": "dispatch-id must be the id the bot dispatched the judge with",
}


def _judge_field(error: Any) -> Any:
    """The top-level key a schema error is about (a missing one for `required`)."""
    if error.path:
        return error.path[0]
    if error.validator == "required":
        return next((key for key in error.validator_value if key not in error.instance), None)
    return None

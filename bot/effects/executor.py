"""The only writer to GitHub: applies each action once, recorded in the delivery's ledger, reconciling lost answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import cachetools
import gidgethub

from bot.delivery.failures import NeedsAPerson, NotListedYet
from bot.delivery.journal import EFFECT_DONE, INTENDED, Effect, JournalBackend
from bot.effects import actions as act
from bot.effects.actions import Result
from bot.effects.comments import CREATED, PER_PAGE, CommentStore, find_bot_issue
from bot.github.client import NOT_SENT_ERRORS, AmbiguousWrite, AuthenticationFailed, GitHubClient, get_or_none
from bot.github.shared_reads import SharedReads
from bot.rules.dispatched_runs import DISPATCH_EVENT, not_the_bots
from bot.rules.links import Slashed, repo_api
from bot.rules.markers import fit, is_bots, purpose_of
from bot.rules.merge import MERGE_OF_TRAILER
from bot.telemetry import logs

RECONCILE_DELAY = 1.0  # GitHub's lists can trail a write by a moment: look again after this
DISPATCH_LOOKS = 4  # a dispatched run takes a few seconds to be listed: look this many times before giving up
RUNS_LOOKED_AT = 2 * PER_PAGE  # how far back the runs of a workflow are searched for a dispatch id
ANNOTATIONS_PER_REQUEST = 50  # GitHub's limit per check run create or update
ANNOTATION_MESSAGE_MAX = 64 * 1024
CHECK_TEXT_MAX = 65535  # output.summary and output.text
CHECK_TITLE_MAX = 255


class Unreconciled(NeedsAPerson):
    """GitHub may have done this effect and its state does not say: it is not sent again blindly."""

    def __init__(self, action: act.Action, reason: str):
        super().__init__(f"{action.describe()}: {reason}")
        self.action = action


class Target(Protocol):
    """What the executor writes through: one delivery's repository, client and reads (bot/core's Context is
    one). The executor never decides; it reads only to find again what it wrote."""

    gh: Any
    repo: str
    bot_login: str
    templates: Any

    @property
    def pr_number(self) -> int | None: ...
    @property
    def html_url(self) -> str: ...
    @property
    def last_try(self) -> bool: ...  # a transient failure now is not retried
    def render(self, kind: str, **variables: Any) -> str: ...
    def forget(self, key: tuple) -> None: ...
    async def comments(self, number: int) -> list[dict]: ...
    async def labels(self, number: int) -> list[str]: ...


class Ledger(Protocol):
    """The effects already done (or intended) for one delivery."""

    def get(self, key: str) -> Effect | None: ...
    async def intend(self, key: str) -> None: ...
    async def withdraw(self, key: str) -> None: ...
    async def complete(self, key: str, result: Result) -> None: ...


class MemoryLedger:
    """A ledger that lives as long as one run (`sweepbot receive`, tests)."""

    def __init__(self) -> None:
        self.rows: dict[str, Effect] = {}

    def get(self, key: str) -> Effect | None:
        return self.rows.get(key)

    async def intend(self, key: str) -> None:
        self.rows[key] = Effect(key, INTENDED, None, time.time())

    async def withdraw(self, key: str) -> None:
        self.rows.pop(key, None)

    async def complete(self, key: str, result: Result) -> None:
        self.rows[key] = Effect(key, EFFECT_DONE, result.to_json(), None)


class JournalLedger:
    """The ledger of one journaled delivery: read once when it starts, each change synced before it matters."""

    def __init__(self, journal: JournalBackend, seq: int, rows: dict[str, Effect]):
        self.journal, self.seq, self.rows = journal, seq, rows

    def get(self, key: str) -> Effect | None:
        return self.rows.get(key)

    async def intend(self, key: str) -> None:
        await self.journal.intend(self.seq, key)
        self.rows[key] = Effect(key, INTENDED, None, time.time())

    async def withdraw(self, key: str) -> None:
        await self.journal.withdraw(self.seq, key)
        self.rows.pop(key, None)

    async def complete(self, key: str, result: Result) -> None:
        self.journal.complete(self.seq, key, result.to_json())  # queued behind the intent, not waited for
        self.rows[key] = Effect(key, EFFECT_DONE, result.to_json(), None)


Perform = Callable[["Executor", Any], Awaitable[Result]]
Reconcile = Callable[["Executor", Any], Awaitable[Result | None]]


class Executor:
    """Applies actions for one delivery; every GitHub write of the bot goes through here."""

    def __init__(
        self,
        ctx: Target,
        store: CommentStore,
        known_labels: SharedReads,
        ledger: Ledger,
        *,
        request_window: float,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_unreconciled: Callable[[str], None] | None = None,
        known_checks: cachetools.TTLCache | None = None,
    ):
        self.ctx = ctx
        self.gh = ctx.gh  # while an action is sent: the client that writes the ledger's intent first
        self.store = store
        self.known_labels = known_labels  # (repo, label) -> seen to exist, to spare a lookup per event
        # (repo, sha, name) -> (check run id, fingerprint of what it shows), to spare a lookup per event
        self.known_checks = known_checks if known_checks is not None else cachetools.TTLCache(maxsize=64, ttl=600)
        self.ledger = ledger
        self.request_window = request_window
        self.sleep = sleep
        self.on_unreconciled = on_unreconciled or (lambda _text: None)
        self.applied: list[tuple[act.Action, Result]] = []

    async def apply(self, action: act.Action) -> Result:
        kind = KINDS.get(type(action))
        if kind is None:
            raise TypeError(f"unknown action {action!r}")
        result = await self._once(action, kind)
        self.applied.append((action, result))
        return result

    async def _once(self, action: act.Action, kind: Kind) -> Result:
        key = action.key
        row = self.ledger.get(key)
        if row is not None and row.state == EFFECT_DONE:
            return Result.from_json(row.result)
        if row is not None and row.state == INTENDED:
            # An earlier attempt sent this and its answer is lost (a crash, a timeout): wait out that request,
            # then ask GitHub what happened.
            wait = (row.intended_at or 0) + self.request_window - time.time()
            if wait > 0:
                logs.event("waiting out an earlier attempt before reconciling", key=key, seconds=round(wait, 1))
                await self.sleep(wait)
            found = await kind.reconcile(self, action)
            if found is not None:
                logs.event("effect found done by an earlier attempt", key=key, id=found.id)
                await self.ledger.complete(key, found)
                return found
            if not kind.resendable:
                raise await self._unreconciled(action, "an earlier attempt may have sent it; GitHub does not show it")
        try:
            result = await self._send(action, kind)
        except NotListedYet as exc:
            # GitHub took it and answered without saying what it made: found by its key, or by a later attempt
            logs.event("write taken, its result not listed yet; looking for it", key=key, error=str(exc))
            found = await self._look_again(action, kind)
            if found is None:
                if self.ctx.last_try:
                    raise await self._unreconciled(action, str(exc)) from exc
                raise  # the intent stays: the next attempt finds it, or says it cannot
            result = found
        except AmbiguousWrite as exc:
            logs.event("write answer lost, reconciling", key=key, error=str(exc))
            found = await self._look_again(action, kind)
            if found is not None:
                await self.ledger.complete(key, found)
                return found
            if not kind.resendable:
                raise await self._unreconciled(action, str(exc)) from exc
            result = await self._send(action, kind)  # GitHub shows no trace of it: one more send, then give up
        await self.ledger.complete(key, result)
        return result

    async def _send(self, action: act.Action, kind: Kind) -> Result:
        key = action.key
        intended = []

        async def intend() -> None:
            await self.ledger.intend(key)
            intended.append(True)

        self.gh = self.ctx.gh.announcing_writes(intend)
        try:
            return await kind.perform(self, action)
        except Exception as exc:
            # Only when GitHub answered and refused (a 4xx, a rate limit after its retries) or the send never left
            # did the effect not happen: then the intent goes, else a retried dispatch would be refused as possibly
            # done. Otherwise (a lost answer, an answer without the run, a bug after the write) GitHub may have
            # acted: the intent stays, and a later attempt looks before sending again.
            if intended and not kind.partial and refused(exc):
                await self.ledger.withdraw(key)
            raise
        finally:
            self.gh = self.ctx.gh

    async def _look_again(self, action: act.Action, kind: Kind) -> Result | None:
        for look in range(kind.looks):
            await self.sleep(RECONCILE_DELAY * (look + 1))
            found = await kind.reconcile(self, action)
            if found is not None:
                return found
        return None

    async def _unreconciled(self, action: act.Action, reason: str) -> Unreconciled:
        """Shown in /healthz and, for a dispatch on a PR, said on the PR; the caller raises it."""
        exc = Unreconciled(action, reason)
        self.on_unreconciled(str(exc))
        logs.event("effect could not be reconciled; not sending it again", error=str(exc))
        number = self.ctx.pr_number
        if isinstance(action, act.DispatchWorkflow) and number is not None:
            body = self.ctx.render(
                "dispatch_unknown",
                workflow=action.workflow,
                ref=action.ref,
                dispatch_id=action.dispatch_id,
                reason=reason[:200],
                runs_url=f"{self.ctx.html_url}/actions/workflows/{action.workflow}",
            )
            try:
                await self.apply(act.Comment(number, f"dispatch-unknown-{action.dispatch_id}", body))
            except Exception as report_exc:  # the failure itself is still recorded and shown in /healthz
                logs.event("could not report an unreconciled dispatch on the PR", error=str(report_exc))
        return exc

    # -- comments ------------------------------------------------------------------------------

    def _truncated_note(self, limit: int) -> str:
        return self.ctx.templates.render("truncated", limit=limit)

    async def comment(self, action: act.Comment) -> Result:
        body = fit(action.purpose, action.body, self._truncated_note)
        outcome, comment = await self.store.upsert(
            self.gh,
            self.ctx.repo,
            action.number,
            action.purpose,
            body,
            self.ctx.bot_login,
            only_if_missing=action.only_if_missing,
            listing=lambda: self.ctx.comments(action.number),
        )
        if outcome == CREATED:
            (await self.ctx.comments(action.number)).append(comment)
        return Result(outcome, comment.get("id"))

    async def find_comment(self, action: act.Comment) -> Result | None:
        self.ctx.forget(("comments", action.number))
        listing = await self.ctx.comments(action.number)
        found = await self.store.find(
            self.gh, self.ctx.repo, action.number, action.purpose, self.ctx.bot_login, listing, trust_memory=False
        )
        if found is None:
            return None
        return await self.comment(action)  # now it is found: edited if its body differs, else left alone

    # -- labels --------------------------------------------------------------------------------

    async def add_labels(self, action: act.AddLabels) -> Result:
        await self.gh.post(
            repo_api(self.ctx.repo, "issues", action.number, "labels"), data={"labels": list(action.labels)}
        )
        self.ctx.forget(("labels", action.number))
        return Result("added")

    async def find_labels(self, action: act.AddLabels) -> Result | None:
        self.ctx.forget(("labels", action.number))
        have = {name.casefold() for name in await self.ctx.labels(action.number)}
        return Result("added") if all(n.casefold() in have for n in action.labels) else None

    async def remove_label(self, action: act.RemoveLabel) -> Result:
        try:
            await self.gh.delete(repo_api(self.ctx.repo, "issues", action.number, "labels", action.label))
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:  # already gone: the goal is met
                raise
            return Result("absent")
        self.ctx.forget(("labels", action.number))
        return Result("removed")

    async def ensure_label(self, action: act.EnsureLabel) -> Result:
        key = (self.ctx.repo, action.name)
        if key in self.known_labels.cache:
            return Result("exists")
        # deliveries adding a label new to the repository at once look it up and create it once, for all of them
        return Result(await self.known_labels.get(key, lambda: self._ensure_label(action)))

    async def _ensure_label(self, action: act.EnsureLabel) -> str:
        if await get_or_none(self.gh, repo_api(self.ctx.repo, "labels", action.name)) is not None:
            return "exists"
        try:
            await self.gh.post(
                repo_api(self.ctx.repo, "labels"),
                data={"name": action.name, "color": action.color, "description": action.description},
            )
        except gidgethub.InvalidField:
            pass  # created meanwhile by someone else
        return "created"

    async def find_label(self, action: act.EnsureLabel) -> Result | None:
        if await get_or_none(self.gh, repo_api(self.ctx.repo, "labels", action.name)) is None:
            return None
        self.known_labels.cache[(self.ctx.repo, action.name)] = "exists"
        return Result("created")

    # -- issues --------------------------------------------------------------------------------

    async def issue(self, action: act.Issue) -> Result:
        gh, repo = self.gh, self.ctx.repo
        body = fit(action.purpose, action.body, self._truncated_note)
        issue = await find_bot_issue(gh, repo, action.purpose, self.ctx.bot_login)
        if issue is None:
            created = await gh.post(repo_api(repo, "issues"), data={"title": action.title, "body": body})
            return Result("created", created.get("number"))
        if issue.get("body") == body and issue.get("title") == action.title:
            return Result("unchanged", issue["number"])
        await gh.patch(repo_api(repo, "issues", issue["number"]), data={"title": action.title, "body": body})
        return Result("updated", issue["number"])

    async def find_issue(self, action: act.Issue) -> Result | None:
        if await find_bot_issue(self.gh, self.ctx.repo, action.purpose, self.ctx.bot_login) is None:
            return None
        return await self.issue(action)

    async def close_issue(self, action: act.CloseIssue) -> Result:
        issue = await find_bot_issue(self.gh, self.ctx.repo, action.purpose, self.ctx.bot_login)
        if issue is None:
            return Result("absent")
        await self.gh.patch(repo_api(self.ctx.repo, "issues", issue["number"]), data={"state": "closed"})
        return Result("closed", issue["number"])

    # -- reactions -----------------------------------------------------------------------------

    def _reactions_url(self, comment_id: int, *more: str | int, **query: str | int) -> str:
        return repo_api(self.ctx.repo, "issues", "comments", comment_id, "reactions", *more, **query)

    async def react(self, action: act.React) -> Result:
        made = await self.gh.post(self._reactions_url(action.comment_id), data={"content": action.content})
        return Result("reacted", made.get("id"))

    def _made(self, action: act.Action) -> Result | None:
        """What this delivery (or an earlier attempt of it) made for `action`, as its ledger holds it: a reaction
        to take off again needs no listing to find its id."""
        row = self.ledger.get(action.key)
        if row is None or row.state != EFFECT_DONE:
            return None
        made = Result.from_json(row.result)
        return made if made.id else None

    async def find_reaction(self, action: act.React | act.Unreact) -> Result | None:
        url = self._reactions_url(action.comment_id, content=action.content, per_page=PER_PAGE)
        async for reaction in self.gh.getiter(url):
            if is_bots(reaction, self.ctx.bot_login) and reaction.get("content") == action.content:
                return Result("reacted", reaction["id"])
        return None

    async def unreact(self, action: act.Unreact) -> Result:
        found = self._made(act.React(action.comment_id, action.content)) or await self.find_reaction(action)
        if found is None or found.id is None:
            return Result("absent")
        try:
            await self.gh.delete(self._reactions_url(action.comment_id, found.id))
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
        return Result("removed", found.id)

    # -- workflow dispatch ---------------------------------------------------------------------

    async def dispatch(self, action: act.DispatchWorkflow) -> Result:
        # The ledger knows this delivery's effects only; an earlier delivery (or a journal lost since) may
        # have started this very run. A look costs one read; a second sweep costs hours of GPU nodes.
        found = await self.find_run(action)
        if found is not None:
            logs.event("run already started for this dispatch id", dispatch_id=action.dispatch_id, run=found.id)
            return found
        answer = await self.gh.post(
            repo_api(self.ctx.repo, "actions", "workflows", action.workflow, "dispatches"),
            data={"ref": action.ref, "inputs": dict(action.inputs), "return_run_details": True},
        )
        if isinstance(self.gh, GitHubClient):  # (a test's own GitHubAPI has no budget to wait in)
            self.gh.waited_for()  # the sweep is started: this delivery's other requests may wait behind others'
        run_id = (answer or {}).get("workflow_run_id") if isinstance(answer, dict) else None
        if run_id is None:  # a GitHub that answers 204 without run details: the run is found by its dispatch-id
            raise NotListedYet(f"{action.describe()}: dispatched, but its run is not listed yet")
        return Result("dispatched", int(run_id), {"html_url": answer.get("html_url")})

    async def find_run(self, action: act.DispatchWorkflow) -> Result | None:
        """The run this dispatch started, by its dispatch id, among the bot's own dispatches of the workflow (a
        fork's `pull_request` run can carry the same id in its name: bot.rules.dispatched_runs)."""
        query: dict[str, str | int | None] = {
            "branch": action.ref,
            "event": DISPATCH_EVENT,
            "per_page": PER_PAGE,
            "head_sha": action.head_sha,
        }
        url = repo_api(self.ctx.repo, "actions", "workflows", action.workflow, "runs", **query)
        seen = 0
        async for run in self.gh.getiter(url, iterable_key="workflow_runs"):
            names = f"{run.get('name') or ''} {run.get('display_title') or ''}"
            if (
                action.dispatch_id in names
                and not_the_bots(
                    run, bot_login=self.ctx.bot_login, repository=self.ctx.repo, workflows=(action.workflow,)
                )
                is None
            ):
                return Result("dispatched", run["id"], {"html_url": run.get("html_url")})
            seen += 1
            if seen >= RUNS_LOOKED_AT:  # newest first: a run of ours is among the latest, not in years of history
                break
        return None

    async def repository_dispatch(self, action: act.RepositoryDispatch) -> Result:
        await self.gh.post(
            repo_api(action.repository, "dispatches"),
            data={"event_type": action.event_type, "client_payload": dict(action.payload)},
        )
        return Result("dispatched")

    async def cancel_run(self, action: act.CancelRun) -> Result:
        try:
            await self.gh.post(repo_api(self.ctx.repo, "actions", "runs", action.run_id, "cancel"), data={})
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) == 409:  # it finished meanwhile: nothing left to cancel
                return Result("finished", action.run_id)
            if int(exc.status_code) == 404:
                return Result("absent", action.run_id)
            raise
        return Result("cancelled", action.run_id)

    async def find_cancelled(self, action: act.CancelRun) -> Result | None:
        run = await self.gh.getitem(repo_api(self.ctx.repo, "actions", "runs", action.run_id))
        if run.get("status") == "completed":
            return Result("cancelled" if run.get("conclusion") == "cancelled" else "finished", action.run_id)
        return None  # a cancel is safe to send again

    # -- merges --------------------------------------------------------------------------------

    async def merge_pull(self, action: act.MergePull) -> Result:
        repo = self.ctx.repo
        tree = await self._merge_tree(action) if action.changes or action.way == "git-data" else None
        if action.way == "git-data":
            commit = await self._commit(tree or "", [action.base_sha, action.head_sha], action.message)
            # a fast-forward only: a base that moved meanwhile is refused (422), never overwritten
            await self.gh.patch(
                repo_api(repo, "git", "refs", "heads", Slashed(action.base)), data={"sha": commit, "force": False}
            )
            return Result("merged", action.number, {"sha": commit})
        sha = action.head_sha
        if tree is not None:  # the PR's branch first gets the base and the resolved changelog, marked not to sweep
            sha = await self._commit(tree, [action.head_sha, action.base_sha], _prepared_message(action))
            sha = await self._fast_forward_branch(action, sha, tree)
        answer = await self.gh.put(
            repo_api(repo, "pulls", action.number, "merge"),
            data={
                "sha": sha,
                "merge_method": action.method,
                "commit_title": action.title,
                "commit_message": action.message,
            },
        )
        return Result("merged", action.number, {"sha": (answer or {}).get("sha") or ""})

    async def _merge_tree(self, action: act.MergePull) -> str:
        entries = [_tree_entry(change) for change in action.changes]
        tree = await self.gh.post(
            repo_api(self.ctx.repo, "git", "trees"), data={"base_tree": action.base_tree, "tree": entries}
        )
        return str(tree["sha"])

    async def _commit(self, tree: str, parents: list[str], message: str) -> str:
        made = await self.gh.post(
            repo_api(self.ctx.repo, "git", "commits"), data={"message": message, "tree": tree, "parents": parents}
        )
        return str(made["sha"])

    async def _fast_forward_branch(self, action: act.MergePull, sha: str, tree: str) -> str:
        """The commit the PR's branch holds for the merge: `sha`, fast-forwarded to."""
        url = repo_api(self.ctx.repo, "git", "refs", "heads", Slashed(action.head_ref))
        try:
            await self.gh.patch(url, data={"sha": sha, "force": False})
            return sha
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 422:
                raise
            # An earlier attempt whose answer was lost may have moved the branch to its own commit of the same
            # tree and parents (commits differ by their time): that one is merged instead.
            ref = await self.gh.getitem(repo_api(self.ctx.repo, "git", "ref", "heads", Slashed(action.head_ref)))
            head = await self.gh.getitem(repo_api(self.ctx.repo, "git", "commits", ref["object"]["sha"]))
            parents = [parent.get("sha") for parent in head.get("parents") or ()]
            if parents != [action.head_sha, action.base_sha] or (head.get("tree") or {}).get("sha") != tree:
                raise
            return str(head["sha"])

    async def find_merge(self, action: act.MergePull) -> Result | None:
        """The PR merged already (by an earlier attempt whose answer was lost, or by anyone): GitHub says so, or
        its base branch holds the PR's head."""
        pull = await self.gh.getitem(repo_api(self.ctx.repo, "pulls", action.number))
        if pull.get("merged"):
            return Result("merged", action.number, {"sha": pull.get("merge_commit_sha") or ""})
        compared = await self.gh.getitem(
            repo_api(self.ctx.repo, "compare", f"{action.base}...{action.head_sha}", per_page=1)
        )
        if compared.get("status") in ("behind", "identical"):
            return Result("merged", action.number, {"sha": ""})
        return None

    # -- check runs ----------------------------------------------------------------------------

    async def _existing_check(self, action: act.CheckRun) -> tuple[int, str, bool] | None:
        """(id, fingerprint, whether it is completed) of the bot's check run `name` on the commit, from memory or
        from GitHub."""
        cache_key = (self.ctx.repo, action.head_sha, action.name)
        if cache_key in self.known_checks:
            return self.known_checks[cache_key]
        url = repo_api(
            self.ctx.repo,
            "commits",
            action.head_sha,
            "check-runs",
            check_name=action.name,
            filter="latest",
            per_page=PER_PAGE,
        )
        async for run in self.gh.getiter(url, iterable_key="check_runs"):
            slug = (run.get("app") or {}).get("slug")
            if run.get("name") == action.name and (slug is None or f"{slug}[bot]" == self.ctx.bot_login):
                found = (int(run["id"]), run.get("external_id") or "", run.get("status") == "completed")
                self.known_checks[cache_key] = found
                return found
        return None

    async def check_run(self, action: act.CheckRun) -> Result:
        cache_key = (self.ctx.repo, action.head_sha, action.name)
        if action.rewrite and action.status != "completed":  # "Re-run" queued it again: read what it is now
            self.known_checks.pop(cache_key, None)
        existing = await self._existing_check(action)
        if existing is not None and existing[1] == action.fingerprint and not action.rewrite:
            return Result("unchanged", existing[0])
        if existing is not None and existing[2] and action.status != "completed":
            existing = None  # GitHub never moves a completed check run back: a new one of that name takes its place
        batches = [
            action.annotations[i : i + ANNOTATIONS_PER_REQUEST]
            for i in range(0, len(action.annotations), ANNOTATIONS_PER_REQUEST)
        ] or [()]
        state = (
            {"status": "completed", "conclusion": action.conclusion}
            if action.status == "completed"
            else {"status": action.status}
        )  # not finished: GitHub shows it running, with no conclusion
        body: dict[str, Any] = {
            "name": action.name,
            **state,
            "external_id": action.fingerprint,
            "output": {
                "title": action.title[:CHECK_TITLE_MAX],
                "summary": action.summary[:CHECK_TEXT_MAX],
                "text": action.text[:CHECK_TEXT_MAX],
                "annotations": _annotations(batches[0]),
            },
        }
        if action.details_url:
            body["details_url"] = action.details_url
        body["actions"] = [
            {"label": b.label, "description": b.description, "identifier": b.identifier} for b in action.buttons
        ]  # always sent: an update without buttons takes them off
        if existing is None:
            made = await self.gh.post(repo_api(self.ctx.repo, "check-runs"), data={**body, "head_sha": action.head_sha})
            check_id, outcome = int(made["id"]), "created"
        else:
            check_id, outcome = existing[0], "updated"
            await self.gh.patch(repo_api(self.ctx.repo, "check-runs", check_id), data=body)
        for batch in batches[1:]:  # GitHub takes 50 annotations per request and appends the next ones
            await self.gh.patch(
                repo_api(self.ctx.repo, "check-runs", check_id),
                data={"output": {**body["output"], "annotations": _annotations(batch)}},
            )
        self.known_checks[cache_key] = (check_id, action.fingerprint, action.status == "completed")
        return Result(outcome, check_id)

    async def find_check(self, action: act.CheckRun) -> Result | None:
        self.known_checks.pop((self.ctx.repo, action.head_sha, action.name), None)
        if await self._existing_check(action) is None:
            return None
        return await self.check_run(action)  # found: brought up to date in place

    # -- reviews -------------------------------------------------------------------------------

    async def _bot_reviews(self, action: act.SuggestionReview) -> list[dict]:
        url = repo_api(self.ctx.repo, "pulls", action.number, "reviews", per_page=PER_PAGE)
        return [
            r
            async for r in self.gh.getiter(url)
            if is_bots(r, self.ctx.bot_login) and purpose_of(r.get("body")) == action.purpose
        ]

    async def review(self, action: act.SuggestionReview) -> Result:
        body = fit(action.purpose, action.body, self._truncated_note)
        reviews = await self._bot_reviews(action)
        current = next(
            (
                r
                for r in reviews
                if action.comments and r.get("commit_id") == action.commit_id and r.get("body") == body
            ),
            None,
        )
        outcome, review_id = ("unchanged", current["id"]) if current is not None else ("retired", None)
        if current is None and action.comments:
            made = await self.gh.post(
                repo_api(self.ctx.repo, "pulls", action.number, "reviews"),
                data={
                    "commit_id": action.commit_id,
                    "event": "COMMENT",
                    "body": body,
                    "comments": [_review_comment(c) for c in action.comments],
                },
            )
            outcome, review_id = "created", int(made["id"])
        outdated = fit(f"{action.purpose}-outdated", action.outdated_body, self._truncated_note)
        for old in reviews:
            if old["id"] != review_id:
                await self._retire(action.number, int(old["id"]), outdated)
        return Result(outcome, review_id)

    async def _retire(self, number: int, review_id: int, outdated: str) -> None:
        """A review's body says it is outdated and its suggestions go (applying one to a newer head would be wrong)."""
        repo = self.ctx.repo
        await self.gh.put(repo_api(repo, "pulls", number, "reviews", review_id), data={"body": outdated})
        url = repo_api(repo, "pulls", number, "reviews", review_id, "comments", per_page=PER_PAGE)
        for comment in [c async for c in self.gh.getiter(url)]:
            try:
                await self.gh.delete(repo_api(repo, "pulls", "comments", comment["id"]))
            except gidgethub.BadRequest as exc:
                if int(exc.status_code) != 404:  # already gone: the goal is met
                    raise
        logs.event("review retired", review=review_id, pr=number)


def _review_comment(comment: act.ReviewComment) -> dict[str, Any]:
    out: dict[str, Any] = {"path": comment.path, "line": comment.line, "side": "RIGHT", "body": comment.body}
    if comment.start_line is not None and comment.start_line < comment.line:
        out.update(start_line=comment.start_line, start_side="RIGHT")
    return out


def _prepared_message(action: act.MergePull) -> str:
    """The message of the bot's commit on a PR's branch: not swept, and naming the head the merge was checked on
    (bot.rules.merge.prepared_for reads it back)."""
    return (
        f"Merge {action.base} into #{action.number} for its merge {action.skip_marker}\n\n"
        f"{MERGE_OF_TRAILER}: {action.checked_sha}"
    )


def _tree_entry(change: act.TreeChange) -> dict[str, Any]:
    kind = "commit" if change.mode == "160000" else "blob"
    if change.content is not None:
        return {"path": change.path, "mode": change.mode, "type": kind, "content": change.content}
    return {"path": change.path, "mode": change.mode, "type": kind, "sha": change.sha}


def refused(exc: BaseException) -> bool:
    """Whether a send that failed with `exc` surely did not happen: GitHub answered and refused it (a 4xx, a
    rate limit after its retries, credentials refused even fresh) or the request never left."""
    if isinstance(exc, gidgethub.HTTPException):
        return int(exc.status_code) < 500  # a 5xx of a write is an AmbiguousWrite; of an idempotent one, unknown
    return isinstance(exc, (AuthenticationFailed, *NOT_SENT_ERRORS))


def _annotations(batch: tuple[act.Annotation, ...]) -> list[dict[str, Any]]:
    return [
        {
            "path": a.path,
            "start_line": a.line,
            "end_line": a.line,
            "annotation_level": a.level,
            "message": a.message[:ANNOTATION_MESSAGE_MAX],
            **({"title": a.title[:255]} if a.title else {}),
        }
        for a in batch
    ]


class Kind:
    """How one action type is performed, found again after a lost answer, and whether it may be sent again."""

    def __init__(
        self,
        perform: Perform,
        reconcile: Reconcile | None = None,
        *,
        resendable: bool = True,
        looks: int = 1,
        partial: bool = False,
    ):
        self.perform = perform
        self.partial = partial  # several writes: a refused later one does not undo an earlier one
        self.reconcile = reconcile or _nothing_to_find
        self.resendable = resendable
        self.looks = looks


async def _nothing_to_find(_executor: Executor, _action: Any) -> Result | None:
    return None


KINDS: dict[type, Kind] = {
    act.Comment: Kind(Executor.comment, Executor.find_comment),
    act.AddLabels: Kind(Executor.add_labels, Executor.find_labels),
    act.RemoveLabel: Kind(Executor.remove_label),
    act.EnsureLabel: Kind(Executor.ensure_label, Executor.find_label),
    act.Issue: Kind(Executor.issue, Executor.find_issue),
    act.CloseIssue: Kind(Executor.close_issue),
    act.React: Kind(Executor.react, Executor.find_reaction),
    act.Unreact: Kind(Executor.unreact),
    # A second sweep costs hours of GPU nodes: never resent unless GitHub shows the first did not start.
    act.DispatchWorkflow: Kind(Executor.dispatch, Executor.find_run, resendable=False, looks=DISPATCH_LOOKS),
    # GitHub lists no repository_dispatch events: after a lost answer it is sent again (staging a run twice
    # costs the results service a repeat, not hours of GPU nodes).
    act.RepositoryDispatch: Kind(Executor.repository_dispatch),
    act.CancelRun: Kind(Executor.cancel_run, Executor.find_cancelled),
    # Several writes: a refused one (a moved base or head) leaves the PR unmerged, and the caller builds it again
    # from what GitHub shows then (a commit of the bot's already on the PR's branch included). After a lost answer
    # it is sent again only when GitHub shows the PR unmerged.
    act.MergePull: Kind(Executor.merge_pull, Executor.find_merge),
    act.CheckRun: Kind(Executor.check_run, Executor.find_check, partial=True),
    # Sending again is safe: `review` first looks for the bot's review of that commit with that body.
    act.SuggestionReview: Kind(Executor.review, partial=True),
}


def written_text(action: act.Action) -> str:
    """The text `action` would write, shown in full by a dry run: its body, except a suggestion review's without
    line comments, which `Executor.review` never writes (it only retires earlier reviews)."""
    if isinstance(action, act.SuggestionReview) and not action.comments:
        return ""
    return getattr(action, "body", "") or ""


class DryRun:
    """Stands in for the executor in a dry run: prints each action in full and returns placeholders."""

    def __init__(self, ctx: Target, say: Callable[[str], None]):
        self.ctx, self.say = ctx, say
        self.applied: list[tuple[act.Action, Result]] = []

    async def apply(self, action: act.Action) -> Result:
        self.say(f"would {action.describe()}")
        for line in written_text(action).splitlines():
            self.say(f"    | {line}")
        result = Result("planned", 0)
        self.applied.append((action, result))
        return result

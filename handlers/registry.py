"""The features the bot runs, by name, and their routers: `router` holds them all (what `sweepbot serve` runs).

Each feature module handles its own events; the commands of the features chosen go through one command
dispatcher (handlers/commands.py). No feature imports another: where one makes another act (a pin recorded
by the gate), the hand-off is wired here.

The order of FEATURES is the order their handlers run in on one event, and so the order of a delivery's writes
(bot/core/routing.py: the order they were added, never their names); the command dispatcher runs where COMMANDS
stands. On the events that reach more than one feature:

    pull_request opened, reopened     welcome, autolabel, sweep_gate, changelog_suggestions
    pull_request ready_for_review     welcome, sweep_gate, changelog_suggestions
    pull_request synchronize          autolabel, signoff (verdicts stale), sweep_gate, changelog_suggestions
    pull_request edited (retargeted)  signoff, sweep_gate, changelog_suggestions
    pull_request closed               reuse (the merge notice), sweep_gate
    issue_comment                     the command dispatcher, signoff
    workflow_run completed            signoff (verdicts re-verified), sweep_gate
    check_run rerequested             signoff, sweep_gate
    push                              config_refresh, default_branch_changelog

The welcome goes first (a new PR hears it before the status), the changelog's one-click fixes last (the sweep
people wait for is dispatched first).
"""

from gidgethub import routing

from bot.core.routing import OrderedRouter
from handlers import (
    autolabel,
    changelog_suggestions,
    config_refresh,
    default_branch_changelog,
    help_command,
    merge_command,
    pr_state,
    reuse_command,
    signoff,
    staging,
    sweep_gate,
    welcome,
)
from handlers.commands import Dispatcher, Feature

COMMANDS = "help"  # the dispatcher of every chosen feature's commands runs right after this feature's handlers

FEATURES: dict[str, Feature] = {
    "welcome": Feature(welcome.router),
    "autolabel": Feature(autolabel.router),
    "help": help_command.feature,
    "config_refresh": Feature(config_refresh.router),
    "default_branch_changelog": Feature(default_branch_changelog.router),
    # A pin set or withdrawn: the gate records it, then the sign-offs are verified again by it; what the gate
    # reads for it is read while the pin's reply is written.
    "reuse": reuse_command.feature(
        record_changed=pr_state.in_turn(sweep_gate.record_changed, signoff.record_changed),
        read_ahead=sweep_gate.read_ahead,
    ),
    # A merge notifies as the reuse feature does at merge; a run it pins is recorded by the gate.
    "merge": merge_command.feature(
        notify=reuse_command.notify_merge,
        record_changed=pr_state.in_turn(sweep_gate.record_changed, signoff.record_changed),
    ),
    "signoff": Feature(signoff.router),
    "staging": Feature(staging.router),
    "sweep_gate": Feature(sweep_gate.router),
    "changelog_suggestions": Feature(changelog_suggestions.router),
}

# The pull-request workflow: the gate, reuse pins and sign-offs read each other's state; the changelog's own
# checks (the default branch's, the one-click fixes) read the changelog. Framework tests and benches leave them
# out (they count the welcome's and the autolabels' requests); their own tests ask for them.
PR_WORKFLOW = ("sweep_gate", "reuse", "merge", "signoff", "default_branch_changelog", "changelog_suggestions")


def router_of(*names: str) -> routing.Router:
    """Only some features (tests and benchmarks that measure one feature's requests), their commands included,
    in the order of FEATURES whatever the order of `names`."""
    chosen = [name for name in FEATURES if name in names]
    routers: list[routing.Router] = []
    for name in chosen:
        routers.append(FEATURES[name].router)
        if name == COMMANDS or (COMMANDS not in chosen and name == chosen[-1]):
            routers.append(Dispatcher([FEATURES[n] for n in chosen]).router)
    if not chosen:
        routers.append(Dispatcher([]).router)
    return OrderedRouter(*routers)


def router_without(*names: str) -> routing.Router:
    return router_of(*(name for name in FEATURES if name not in names))


router = router_of(*FEATURES)

"""The features the bot runs, by name, and their routers: `router` holds them all (what `sweepbot serve` runs).

Each feature module handles its own events; the commands of the features chosen go through one command
dispatcher (handlers/commands.py). No feature imports another: where one makes another act (a pin recorded
by the gate), the hand-off is wired here.
"""

from gidgethub import routing

from handlers import (autolabel, changelog_suggestions, config_refresh, default_branch_changelog, help_command,
                      pr_state, reuse_command, signoff, staging, sweep_gate, welcome)
from handlers.commands import Dispatcher, Feature

# The order here is not the order their handlers run in on one event: see bot.core.processing.handler_order.
FEATURES: dict[str, Feature] = {
    "welcome": Feature(welcome.router),
    "autolabel": Feature(autolabel.router),
    "help": help_command.feature,
    "config_refresh": Feature(config_refresh.router),
    "sweep_gate": Feature(sweep_gate.router),
    # A pin set or withdrawn: the gate records it, then the sign-offs are verified again by it; what the gate
    # reads for it is read while the pin's reply is written.
    "reuse": reuse_command.feature(record_changed=pr_state.in_turn(sweep_gate.record_changed, signoff.record_changed),
                                   read_ahead=sweep_gate.read_ahead),
    "staging": Feature(staging.router),
    "signoff": Feature(signoff.router),
    "default_branch_changelog": Feature(default_branch_changelog.router),
    "changelog_suggestions": Feature(changelog_suggestions.router),
}

# The pull-request workflow: the gate, reuse pins and sign-offs read each other's state; the changelog's own
# checks (the default branch's, the one-click fixes) read the changelog. Framework tests and benches leave them
# out (they count the welcome's and the autolabels' requests); their own tests ask for them.
PR_WORKFLOW = ("sweep_gate", "reuse", "signoff", "default_branch_changelog", "changelog_suggestions")


def router_of(*names: str) -> routing.Router:
    """Only some features (tests and benchmarks that measure one feature's requests), their commands included."""
    chosen = [FEATURES[name] for name in names]
    return routing.Router(*(feature.router for feature in chosen), Dispatcher(chosen).router)


def router_without(*names: str) -> routing.Router:
    return router_of(*(name for name in FEATURES if name not in names))


router = router_of(*FEATURES)
